//go:build !race

package lockdown_test

const raceEnabled = false
