//go:build !linux

package main

// measureYardstick: measured on Linux only.
func measureYardstick(string) *Yardstick { return nil }
