//go:build race

package dispatch

// raceEnabled reports that the tests run under the race detector, which slows the client
// 5-10× (timing verdicts then judge the detector, not the code).
const raceEnabled = true
