/*
 * CSV of the rows a table shows (RFC 4180), safe to open in a spreadsheet: a cell that a spreadsheet
 * would read as a formula is written as text.
 */

// A spreadsheet reads a cell starting with one of these as a formula (tab and carriage return too).
const FORMULA_START = /^[=+\-@\t\r]/

/**
 * One cell: a formula-like start prefixed with `'`, quoted when it holds a comma, a quote or a line break.
 * @param {string} value
 */
export function csvCell (value) {
  const text = FORMULA_START.test(value) ? `'${value}` : value
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text
}

/**
 * The rows as CSV text, lines ended by CRLF.
 * @param {string[][]} rows
 */
export function toCsv (rows) {
  return rows.map((row) => row.map(csvCell).join(',') + '\r\n').join('')
}

/**
 * Has the browser save the text as a file (a Blob, so nothing leaves the page).
 * @param {string} filename
 * @param {string} text
 */
export function download (filename, text) {
  const url = URL.createObjectURL(new Blob([text], { type: 'text/csv;charset=utf-8' }))
  const link = document.createElement('a')
  link.href = url
  link.download = filename
  link.hidden = true
  document.body.append(link)
  link.click()
  link.remove()
  setTimeout(() => URL.revokeObjectURL(url), 10_000)
}
