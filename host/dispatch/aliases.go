package dispatch

import "github.com/genload/genload/host/recording"

// Mode is the recording type: see recording.Mode.
type Mode = recording.Mode

// The three request shapes: the recording's (see recording.ModeArray).
const (
	ModeArray  = recording.ModeArray
	ModeRouted = recording.ModeRouted
	ModeN      = recording.ModeN
)

// Result is the recording type: see recording.Result. Its Err and Retried methods are
// recording's.
type Result = recording.Result

// Sequence is the recording type: see recording.Sequence.
type Sequence = recording.Sequence

// Request is the recording type: see recording.Request.
type Request = recording.Request

// ErrorKind is the recording type: see recording.ErrorKind.
type ErrorKind = recording.ErrorKind

// Error kinds: the recording's (see recording.KindTransport).
const (
	KindTransport = recording.KindTransport
	KindHTTP      = recording.KindHTTP
	KindServer    = recording.KindServer
	KindStream    = recording.KindStream
	KindTimeout   = recording.KindTimeout
	KindCanceled  = recording.KindCanceled
)

// RequestError is the recording type: see recording.RequestError.
type RequestError = recording.RequestError

// StallError is the recording type: see recording.StallError.
type StallError = recording.StallError

// Retry is the recording type: see recording.Retry.
type Retry = recording.Retry

// RetryStats is the recording type: see recording.RetryStats.
type RetryStats = recording.RetryStats
