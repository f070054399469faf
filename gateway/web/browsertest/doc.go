// Package browsertest holds the end-to-end tests of seatledger's web pages:
// headless Chromium, driven with chromedp, against a real `seatd dev`
// cluster built from this module and started on free loopback ports. It has
// no code of its own; see browser_test.go for what the tests prove and the
// docs/WEB.md for how to run them.
package browsertest
