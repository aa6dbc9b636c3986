package actors

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
)

// TLS turned on, off, or moved between modes on a running replica set
// (docs/design/security.md, "Turning TLS on and off"):
//  1. The state holds the spec.tls the objects are built with (TLSRoll);
//     the first decision records spec.tls as it is (TLSRecorded).
//  2. When spec.tls asks another mode and no step is under way, one step
//     toward it starts (TLSStepStarted), in the order no TLS, allowTLS,
//     preferTLS, requireTLS, either way: at each step every member can reach
//     every other (an allowTLS member dials plain, which every mode but
//     requireTLS accepts; a preferTLS one dials TLS, which every mode with
//     TLS accepts). The objects take the step's mode (Running) and the
//     members restart one at a time through the rolling restart
//     (decide_roll.go): secondaries first, the primary after a step-down.
//  3. Once the StatefulSets have the step's template, no pod runs an older
//     one and every member is healthy, the step is over (TLSStepFinished);
//     the next step starts at the next decision.
//  4. The operator's client, and the status' connection string, use TLS
//     while every member serves it (TLSRoll.ClientTLS): turning TLS on, from
//     the end of the allowTLS step; turning it off, until the step from
//     allowTLS to no TLS starts.
//
// A new certificateSecretRef or caSecretRef at the same mode is recorded
// (TLSRecorded) and rolls like any template change.

// tlsModes are the steps, in order.
var tlsModes = []string{"", "allowTLS", "preferTLS", "requireTLS"}

// nextTLSMode is the mode one step from from toward goal.
func nextTLSMode(from, goal string) string {
	i, j := slices.Index(tlsModes, from), slices.Index(tlsModes, goal)
	switch {
	case i < 0 || j < 0 || i == j:
		return goal
	case i < j:
		return tlsModes[i+1]
	}
	return tlsModes[i-1]
}

// tlsChange records spec.tls, or starts the next step of its mode; true
// when a step started (the observation predates the step's objects).
func (d *decider) tlsChange() bool {
	want, t := d.in.Mgors.Spec.TLS, d.s.TLS
	switch {
	case !t.Known:
		d.emit(TLSRecorded{Spec: want})
		return false
	case t.Stepping():
		return false
	case tlsMode(want) == t.Mode():
		if !reflect.DeepEqual(want, t.Spec) {
			d.emit(TLSRecorded{Spec: want})
		}
		return false
	}
	next := nextTLSMode(t.Mode(), tlsMode(want))
	var spec *v1alpha1.TLSSpec
	if next != "" {
		spec = want.DeepCopy()
		if spec == nil {
			spec = t.Spec.DeepCopy() // spec.tls removed: the Secrets the members run with
		}
		spec.Mode = v1alpha1.TLSMode(next)
	}
	d.emit(TLSStepStarted{From: t.Mode(), To: next, Goal: tlsMode(want), Spec: spec})
	return true
}

// finishTLS ends a step once every member restarted into its mode and is
// healthy; it returns true while a step is under way.
func (d *decider) finishTLS() bool {
	t := d.s.TLS
	return d.finishStep(t.Stepping(), TLSStepFinished{Mode: t.Mode()})
}

// tlsUnfinished says what a TLS change still waits for, "" when none.
func (d *decider) tlsUnfinished() string {
	t := d.s.TLS
	switch {
	case !t.Known:
		return ""
	case t.Stepping():
		return fmt.Sprintf("TLS mode %s → %s: members restart one at a time", modeName(t.Previous), modeName(t.Mode()))
	case tlsMode(d.in.Mgors.Spec.TLS) != t.Mode():
		return fmt.Sprintf("TLS mode %s, spec.tls asks %s: the next step is due", modeName(t.Mode()), modeName(tlsMode(d.in.Mgors.Spec.TLS)))
	}
	return ""
}

// PlainClientAnnotation is set on the copy of the Mgors the actor hands the
// World (never on the object in the API) while members are built with TLS
// but some still run without it: the operator connects plain.
const PlainClientAnnotation = "mgors.io/operator-connects-plain"

// runningTLS sets out's spec.tls to the state's (a copy of m, or m itself
// when nothing differs); see Running.
func runningTLS(m *v1alpha1.Mgors, s State) *v1alpha1.Mgors {
	t := s.TLS
	plain := t.Spec != nil && !t.ClientTLS()
	pinned := t.Spec != nil && (t.Renewed || t.CAChanged)
	if !t.Known || (reflect.DeepEqual(t.Spec, m.Spec.TLS) && !plain && !pinned) {
		return m
	}
	out := m.DeepCopy()
	out.Spec.TLS = t.Spec.DeepCopy()
	annotate := func(key, value string) {
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[key] = value
	}
	if plain {
		annotate(PlainClientAnnotation, "true")
	}
	if pinned && t.Renewed {
		annotate(kube.CertificateSerialAnnotation, t.Serial)
	}
	if pinned && t.CAChanged {
		annotate(kube.CABundleAnnotation, strings.Join(t.CAs, ","))
	}
	return out
}

// connectable is m as clients reach it now, for the status' connection
// string: with spec.tls only while every member serves TLS.
func connectable(m *v1alpha1.Mgors, s State) *v1alpha1.Mgors {
	t := s.TLS
	if !t.Known || t.ClientTLS() == (m.Spec.TLS != nil) {
		return m
	}
	out := m.DeepCopy()
	out.Spec.TLS = nil
	if t.ClientTLS() {
		out.Spec.TLS = t.Spec.DeepCopy()
	}
	return out
}
