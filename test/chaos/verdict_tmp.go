package chaos

// A stand-in for the checker and report (check*.go, report*.go), with their
// signatures, until they are merged: it finds nothing and writes nothing. It is
// deleted at the merge.

import (
	"io"
	"time"
)

// Bounds are the limits the checker judges a run by.
type Bounds struct {
	// Healthy bounds the time from a fault's heal to every cluster Healthy.
	Healthy time.Duration
}

// Violation is one property a run broke.
type Violation struct {
	Property string
	Detail   string
}

// Verdict is the checker's judgement of a history.
type Verdict struct {
	Violations []Violation
}

// OK is true when nothing was violated.
func (v Verdict) OK() bool { return len(v.Violations) == 0 }

// Check judges a history (stand-in: finds nothing).
func Check(h *History, b Bounds) Verdict { return Verdict{} }

// Summary prints the human summary (stand-in: nothing).
func Summary(w io.Writer, h *History, v Verdict) {}

// WriteReport writes the report files into dir (stand-in: nothing).
func WriteReport(dir string, h *History, v Verdict) error { return nil }
