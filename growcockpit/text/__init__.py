"""Floor 1: text every layer writes or reads, standard library only.

`safe_text` (a user's value quoted as a plan writes it, terminal-safe),
`wording` (counts and speed ratios in words), `safe_json` (untrusted JSON files
read without blocking, recursing or reading without bound) and `control_error`
(the control socket's one error). They sit below every other package, `plan`
and `protocol` included, so a layer that needs only a quoted value or a JSON
file never stands on the run protocol; an import-linter contract keeps this
package free of every other growcockpit package and of everything outside the
standard library. Nothing is re-exported here: importing `growcockpit.text`
pulls in no module a caller did not name.
"""
