/*
 * The token page (/auth/token): the signed-in user and the current access token, as the text to paste
 * into /api/docs → Authorize. The token is renewed before it expires, in every open tab at once.
 */
import { ApiError, Session, tokenClaims } from '../shared/session.js'

/** @param {string} id */
const element = (id) => /** @type {HTMLElement} */ (document.getElementById(id))
/** @param {string} id */
const field = (id) => /** @type {HTMLTextAreaElement} */ (document.getElementById(id))

const title = element('title')
const signedIn = element('signed-in')
const signedOut = element('signed-out')
const errorText = element('error')
let userShown = false

/** @param {unknown} err */
function showError (err) {
  errorText.textContent = err instanceof ApiError ? `${err.status} ${err.error}: ${err.message}` : String(err)
}

const session = new Session({
  onSignedOut () {
    userShown = false
    title.textContent = 'Not signed in'
    signedIn.hidden = true
    signedOut.hidden = false
  },
  onToken (accessToken) {
    field('authorization').value = `Bearer ${accessToken}`
    field('access-token').value = accessToken
    element('expires').textContent = new Date(tokenClaims(accessToken).exp * 1000).toLocaleTimeString()
    signedOut.hidden = true
    signedIn.hidden = false
    if (!userShown) void showUser()
  }
})

async function showUser () {
  userShown = true
  try {
    const user = await (await session.fetch('/api/auth/me')).json()
    title.textContent = `Signed in as ${user.username}`
    element('user').textContent = JSON.stringify(user, null, 2)
    errorText.textContent = ''
  } catch (err) {
    userShown = false
    showError(err)
  }
}

element('sign-in').addEventListener('click', () => session.signIn())
element('sign-out').addEventListener('click', () => { session.signOut().catch(showError) })
element('sign-out-everywhere').addEventListener('click', () => { session.signOutEverywhere().catch(showError) })
element('copy').addEventListener('click', () => { navigator.clipboard.writeText(field('authorization').value).catch(showError) })
session.start().catch(showError)
