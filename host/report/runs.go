package report

import "errors"

// ErrNoRuns is returned by ReadRuns for an empty list of paths.
var ErrNoRuns = errors.New("no results file given")

// ReadRuns reads each path with ReadFile (.json or .jsonl).
func ReadRuns(paths []string) ([]*Run, error) {
	if len(paths) == 0 {
		return nil, ErrNoRuns
	}
	runs := make([]*Run, len(paths))
	for i, p := range paths {
		r, err := ReadFile(p)
		if err != nil {
			return nil, err
		}
		runs[i] = r
	}
	return runs, nil
}
