import { test } from 'tap'
import { SERVER_HELP, serverArguments } from '../../lib/server-usage.ts'

test('the server\'s command line: nothing starts it, --help and -h print the usage, anything else is refused', async (t) => {
  t.equal(serverArguments([]), null)
  t.same(serverArguments(['--help']), { code: 0, text: SERVER_HELP })
  t.same(serverArguments(['-h']), { code: 0, text: SERVER_HELP })
  const wrong = serverArguments(['8080'])
  t.equal(wrong?.code, 2)
  t.match(wrong?.text, /takes no arguments \(got "8080"\)/)
})
