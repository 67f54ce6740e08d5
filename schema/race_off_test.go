//go:build !race

package schema

// raceDetector is whether the tests run under the race detector, which
// makes every byte copied cost dozens of times more.
const raceDetector = false
