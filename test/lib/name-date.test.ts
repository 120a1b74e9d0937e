import t from 'tap'
import { meridiemInstant, parseNameDate } from '../../lib/timeline/name-date.ts'
import { MeridiemInference } from '../../lib/timeline/meridiem.ts'
import { isValidTimeZone, zonedToUtc } from '../../lib/timeline/timezone.ts'

const LA = 'America/Los_Angeles'
const ts = (name: string, tz = LA) => parseNameDate(name, tz)?.timestamp

t.test('spec examples', async (t) => {
  t.same(parseNameDate('10/1/2017\u0020\u00a010:09:48 PM - 5, 6 - Shots fired', LA), {
    date: '2017-10-01', timestamp: '2017-10-02T05:09:48Z', sortKey: '2017-10-02T05:09:48Z', approximate: false, meridiem: 'pm'
  })
  t.same(parseNameDate('10/1/2017 22:15 - Title', LA), {
    date: '2017-10-01', timestamp: '2017-10-02T05:15:00Z', sortKey: '2017-10-02T05:15:00Z', approximate: false
  })
  t.same(parseNameDate('10/1/2017 ~9:40 PM - Title', LA), {
    date: '2017-10-01', timestamp: '2017-10-02T04:40:00Z', sortKey: '2017-10-02T04:40:00Z', approximate: true, meridiem: 'pm'
  })
  t.same(parseNameDate('10/2/2017 - Title', LA), {
    date: '2017-10-02', timestamp: null, sortKey: '2017-10-02T07:00:00Z', approximate: false
  })
  t.same(parseNameDate('2017-10-02T06:30:00Z - Title', LA), {
    date: '2017-10-02', timestamp: '2017-10-02T06:30:00Z', sortKey: '2017-10-02T06:30:00Z', approximate: false
  })
  t.same(parseNameDate('2017-10-01 21:05 Title', LA), {
    date: '2017-10-01', timestamp: '2017-10-02T04:05:00Z', sortKey: '2017-10-02T04:05:00Z', approximate: false
  })
  t.equal(parseNameDate('Stage area', LA), null)
  t.equal(parseNameDate('', LA), null)
  t.equal(parseNameDate('Route 10/1/2017', LA), null)
})

t.test('a M/D/YYYY time with no AM/PM and an hour of 1..12 is ambiguous: read as 24-hour, its clock kept for the timeline', async (t) => {
  t.same(parseNameDate('10/1/2017  10:02:52 - 1st Shots', LA), {
    date: '2017-10-01', timestamp: '2017-10-01T17:02:52Z', sortKey: '2017-10-01T17:02:52Z', approximate: false, ambiguous: { hour: 10, minute: 2, second: 52 }
  })
  t.same(parseNameDate('10/1/2017 ~12:05 - x', LA)?.ambiguous, { hour: 12, minute: 5, second: 0 })
  for (const name of ['10/1/2017 0:30 - x', '10/1/2017 13:05 - x', '10/1/2017 10:02 PM - x', '2017-10-01 10:02 - x', '2017-10-01T10:02:00Z - x']) {
    t.equal(parseNameDate(name, LA)?.ambiguous, undefined, `${name}: not ambiguous`)
  }
  t.equal(meridiemInstant('2017-10-01', { hour: 10, minute: 2, second: 52 }, 'pm', LA), '2017-10-02T05:02:52Z')
  t.equal(meridiemInstant('2017-10-01', { hour: 12, minute: 5, second: 0 }, 'am', LA), '2017-10-01T07:05:00Z', '12 AM is midnight')
  t.equal(meridiemInstant('2017-10-01', { hour: 12, minute: 5, second: 0 }, 'pm', LA), '2017-10-01T19:05:00Z', '12 PM is noon')
})

t.test('the AM/PM of the nearest name of the same date with one, the earlier on a tie; none: 24-hour', async (t) => {
  const decide = (names: string[]) => {
    const out = new Map<number, string>()
    const inference = new MeridiemInference<number>((i, m) => out.set(i, m))
    names.forEach((name, i) => {
      const when = parseNameDate(name, LA)
      if (when?.meridiem) inference.explicit(i, when.date, when.meridiem)
      else if (when?.ambiguous) inference.ambiguous(i, when.date, i)
    })
    inference.end()
    return names.map((_, i) => out.get(i) ?? null)
  }
  t.same(decide(['10/1/2017 10:02:44 PM - a', '10/1/2017  10:02:52 - b', '10/1/2017 10:03 PM - c']), [null, 'pm', null], 'between two PMs')
  t.same(decide(['10/1/2017 9:00 AM - a', '10/1/2017 10:00 - b', '10/1/2017 11:00 PM - c']), [null, 'am', null], 'a tie: the earlier')
  t.same(decide(['10/1/2017 9:00 AM - a', 'x', '10/1/2017 10:00 - b', '10/1/2017 11:00 PM - c']), [null, null, 'pm', null], 'the nearer, after it')
  t.same(decide(['10/1/2017 10:00 - b', '10/1/2017 10:30 - c', 'x', '10/1/2017 11:00 PM - d']), ['pm', 'pm', null, null], 'only after')
  t.same(decide(['10/1/2017 10:00 PM - a', '10/2/2017 10:00 - b']), [null, null], 'another date: 24-hour')
  t.same(decide(['10/2/2017 10:00 - b', '10/1/2017 10:00 PM - a', '10/2/2017 9:00 AM - c']), ['am', null, null], 'the same date only')
  t.same(decide(['10/1/2017 10:00 PM - a', '10/1/2017 10:10 - b', 'x', 'x', 'x']), [null, 'pm', null, null, null], 'only before, decided at the end')
  t.same(decide(['10/3/2017 9:00 - a', '10/3/2017 19:30 - b']), [null, null], 'a 24-hour neighbour is no AM/PM')
})

t.test('UTC zone keeps the written time', async (t) => {
  t.equal(ts('10/1/2017 22:15 - Title', 'UTC'), '2017-10-01T22:15:00Z')
  t.equal(parseNameDate('10/2/2017', 'UTC')?.sortKey, '2017-10-02T00:00:00Z')
})

t.test('white space between and before the parts', async (t) => {
  t.equal(ts('\u00a0\u00a0 10/1/2017\u00a0\u00a0\u00a010:09:48\u00a0\u00a0PM - x'), '2017-10-02T05:09:48Z')
  t.equal(ts('\t10/1/2017\t10:09:48\tPM\t- x'), '2017-10-02T05:09:48Z')
  t.equal(ts('10/1/2017 10:09:48PM - x'), '2017-10-02T05:09:48Z', 'no space before PM')
  const about = parseNameDate('10/1/2017\u00a0~\u00a0 9:40\u00a0pm', LA)
  t.equal(about?.timestamp, '2017-10-02T04:40:00Z')
  t.equal(about?.approximate, true)
  t.equal(parseNameDate('10/1/2017~9:40 PM', LA)?.approximate, true, 'tilde touching both')
  t.equal(parseNameDate('10/1/2017 9:40 PM', LA)?.approximate, false)
})

t.test('12-hour clock', async (t) => {
  t.equal(ts('10/1/2017 12:00 AM - x'), '2017-10-01T07:00:00Z', '12 AM is midnight')
  t.equal(ts('10/1/2017 12:30 PM - x'), '2017-10-01T19:30:00Z', '12 PM is noon')
  t.equal(ts('10/1/2017 9:05 pm - x'), '2017-10-02T04:05:00Z', 'lowercase pm')
  t.equal(ts('10/1/2017 9:05 Am - x'), '2017-10-01T16:05:00Z', 'mixed case')
  t.equal(ts('10/1/2017 10:00 a.m. - x'), '2017-10-01T17:00:00Z', 'a.m.')
  t.equal(ts('10/1/2017 10:00 p.m., x'), '2017-10-02T05:00:00Z', 'p.m.')
  t.equal(ts('10/1/2017 10:00 Amsterdam'), '2017-10-01T17:00:00Z', 'a word starting with am is not a meridiem')
  t.equal(ts('10/01/2017 09:05 PM'), '2017-10-02T04:05:00Z', 'leading zeros')
})

t.test('seconds present or absent', async (t) => {
  t.equal(ts('10/1/2017 22:15:07 x'), '2017-10-02T05:15:07Z')
  t.equal(ts('10/1/2017 22:15 x'), '2017-10-02T05:15:00Z')
  t.equal(ts('10/1/2017 7:15'), '2017-10-01T14:15:00Z', '1-digit hour at end of string')
})

t.test('DST gap and overlap', async (t) => {
  t.equal(ts('3/12/2017 2:30 AM - x'), '2017-03-12T10:30:00Z', 'gap moves forward')
  t.equal(ts('11/5/2017 1:30 AM - x'), '2017-11-05T08:30:00Z', 'overlap takes the earlier instant')
  t.equal(ts('11/5/2017 2:30 AM - x'), '2017-11-05T10:30:00Z', 'after the overlap')
  t.equal(ts('3/12/2017 3:30 AM - x'), '2017-03-12T10:30:00Z', 'after the gap')
  t.equal(zonedToUtc(2017, 9, 24, 2, 30, 0, 'Pacific/Auckland').toISOString(), '2017-09-23T14:30:00.000Z', 'gap east of UTC')
  t.equal(zonedToUtc(2017, 4, 2, 2, 30, 0, 'Pacific/Auckland').toISOString(), '2017-04-01T13:30:00.000Z', 'overlap east of UTC')
})

t.test('ISO dates', async (t) => {
  t.same(parseNameDate('2017-10-02T06:30:00+02:00 - x', LA), {
    date: '2017-10-02', timestamp: '2017-10-02T04:30:00Z', sortKey: '2017-10-02T04:30:00Z', approximate: false
  })
  t.equal(ts('2017-10-02T06:30:00-0700 - x'), '2017-10-02T13:30:00Z')
  t.equal(ts('2017-10-02T06:30:00.987Z'), '2017-10-02T06:30:00Z', 'fractional seconds dropped')
  t.equal(ts('2017-10-02T06:30:00.5+02:00 x'), '2017-10-02T04:30:00Z')
  t.equal(ts('2017-10-02T06:30:00.123 x'), '2017-10-02T13:30:00Z', 'fraction without offset is local')
  t.equal(ts('2017-10-02T06:30 - x'), '2017-10-02T13:30:00Z', 'T without offset is local')
  t.equal(ts('2017-10-01 9:05 PM x'), '2017-10-02T04:05:00Z', 'ISO date with 12-hour time')
  t.same(parseNameDate('2017-10-02 - x', LA), {
    date: '2017-10-02', timestamp: null, sortKey: '2017-10-02T07:00:00Z', approximate: false
  })
  t.equal(parseNameDate('2017-10-02Tabc', LA), null, 'T not followed by a time')
  t.equal(parseNameDate('2017-1-2 x', LA), null, 'ISO needs two-digit month and day')
})

t.test('impossible times keep a date-only event', async (t) => {
  for (const name of [
    '10/1/2017 25:10 - x',
    '10/1/2017 10:61 - x',
    '10/1/2017 13:00 PM - x',
    '10/1/2017 0:30 AM - x',
    '10/1/2017 10:10:60 - x',
    '10/1/2017 24:00 - x',
    '10/1/2017 ~25:10 - x',
    '10/1/2017 10:09:4 - x'
  ]) {
    t.same(parseNameDate(name, LA), {
      date: '2017-10-01', timestamp: null, sortKey: '2017-10-01T07:00:00Z', approximate: false
    }, name)
  }
  t.equal(parseNameDate('2017-10-02T25:00Z', LA)?.timestamp, null)
})

t.test('invalid calendar dates are not events', async (t) => {
  t.equal(parseNameDate('13/1/2017 - x', LA), null)
  t.equal(parseNameDate('2/30/2017 10:00 PM - x', LA), null)
  t.equal(parseNameDate('0/1/2017', LA), null)
  t.equal(parseNameDate('1/0/2017', LA), null)
  t.equal(parseNameDate('2017-02-30 - x', LA), null)
  t.equal(parseNameDate('2017-13-01', LA), null)
  t.equal(parseNameDate('2/29/2017', LA), null, 'not a leap year')
  t.equal(parseNameDate('2/29/2016', LA)?.date, '2016-02-29', 'leap year')
  t.equal(parseNameDate('2/29/2000', LA)?.date, '2000-02-29', 'leap century')
  t.equal(parseNameDate('2/29/1900', LA), null, 'non-leap century')
})

t.test('boundary after the date or time', async (t) => {
  t.equal(parseNameDate('10/1/2017abc', LA), null, 'letter right after the date')
  t.equal(parseNameDate('10/1/20175', LA), null, 'digit right after the date')
  t.equal(parseNameDate('2017-10-01x', LA), null)
  t.equal(parseNameDate('110/1/2017', LA), null)
  t.equal(parseNameDate('10/1/2017', LA)?.date, '2017-10-01', 'end of string')
  t.equal(parseNameDate('10/1/2017, Title', LA)?.date, '2017-10-01', 'punctuation')
  t.equal(parseNameDate('10/1/2017-Title', LA)?.date, '2017-10-01')
  t.equal(ts('10/1/2017 10:09:48 PM, x'), '2017-10-02T05:09:48Z')
  t.equal(ts('10/1/2017 10:09:48 PM-x'), '2017-10-02T05:09:48Z')
  t.equal(ts('10/1/2017 10:09abc'), null, 'time running into letters is not a time')
  t.equal(parseNameDate('10/1/2017 10:09abc', LA)?.date, '2017-10-01')
})

t.test('zonedToUtc and isValidTimeZone', async (t) => {
  t.equal(zonedToUtc(2017, 10, 1, 12, 0, 0, 'Asia/Kolkata').toISOString(), '2017-10-01T06:30:00.000Z')
  t.equal(zonedToUtc(2017, 10, 1, 3, 0, 0, 'Asia/Kolkata').toISOString(), '2017-09-30T21:30:00.000Z')
  t.equal(zonedToUtc(2017, 10, 1, 12, 34, 56, 'UTC').toISOString(), '2017-10-01T12:34:56.000Z')
  t.equal(zonedToUtc(2017, 10, 1, 22, 15, 0, LA).toISOString(), '2017-10-02T05:15:00.000Z')
  t.equal(isValidTimeZone('Nowhere/Else'), false)
  t.equal(isValidTimeZone(''), false)
  t.equal(isValidTimeZone('America/Los_Angeles'), true)
  t.equal(isValidTimeZone('UTC'), true)
  t.throws(() => zonedToUtc(2017, 1, 1, 0, 0, 0, 'Nowhere/Else'), RangeError)
})
