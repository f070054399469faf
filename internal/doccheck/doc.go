// Package doccheck keeps the documentation's command lines true: its test
// reads every `seatd ...` and `seatctl ...` line of the code blocks of
// README.md and docs/*.md and checks it against the real binaries' flag
// sets. It has no code of its own.
package doccheck
