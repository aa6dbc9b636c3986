package actors

import (
	"fmt"

	"github.com/mgors/operator/kube"
)

// The events of a keyfile rotation (decide_keyfile.go, docs/design/security.md
// "Rotating the keyfile"). Keys are named by their fingerprint
// (kube.KeyFingerprint: 8 hexadecimal digits of a SHA-256), never shown.

// KeyfileRoll is the keyfile rotation in the state.
type KeyfileRoll struct {
	// Request is the value of RotateKeyfileAnnotation being acted on, ""
	// when no rotation runs.
	Request string `json:"request,omitempty"`
	// Step is the last step whose Secret was written (0 before the first):
	// 1 [old, new], 2 [new, old], 3 [new].
	Step int `json:"step,omitempty"`
	// Rolling is true while the members restart onto step Step's keyfile.
	Rolling bool `json:"rolling,omitempty"`
	// Old and New are the fingerprints of the key replaced and of its
	// successor (New "" until step 1 is written).
	Old string `json:"old,omitempty"`
	New string `json:"new,omitempty"`
	// Template is the step the objects name ("<request>/<step>",
	// kube.KeyfileRotationAnnotation); it stays after the rotation, so the
	// pod template does not change back.
	Template string `json:"template,omitempty"`
}

// Rotating says whether a rotation is under way.
func (k KeyfileRoll) Rotating() bool { return k.Request != "" }

// KeyfileRotationStarted records a person's request (the value of
// RotateKeyfileAnnotation) accepted: the key Old is replaced.
type KeyfileRotationStarted struct {
	Request string `json:"request"`
	Old     string `json:"old"`
}

// KeyfileRotationStep records that the keyfile Secret holds step Step's keys
// (fingerprints Keys, in order): the objects name the step and the members
// restart one at a time, secondaries first, the primary after a step-down.
type KeyfileRotationStep struct {
	Request string   `json:"request"`
	Step    int      `json:"step"`
	Keys    []string `json:"keys"`
}

// KeyfileStepRolled records that every member restarted onto step Step's
// keyfile and is healthy again.
type KeyfileStepRolled struct {
	Request string `json:"request"`
	Step    int    `json:"step"`
}

// KeyfileRotated records the end of a rotation: every member runs the key New
// alone; Old opens nothing any more.
type KeyfileRotated struct {
	Request string `json:"request"`
	Old     string `json:"old"`
	New     string `json:"new"`
}

// ActRotateKeyfile writes one step of a keyfile rotation into the keyfile
// Secret (kube.Applier.RotateKeyfile); the step is ActionStarted's Step.
const ActRotateKeyfile ActionKind = "RotateKeyfile"

func (KeyfileRotationStarted) Type() string { return "KeyfileRotationStarted" }
func (KeyfileRotationStep) Type() string    { return "KeyfileRotationStep" }
func (KeyfileStepRolled) Type() string      { return "KeyfileStepRolled" }
func (KeyfileRotated) Type() string         { return "KeyfileRotated" }

func init() {
	register(KeyfileRotationStarted{})
	register(KeyfileRotationStep{})
	register(KeyfileStepRolled{})
	register(KeyfileRotated{})
}

// foldKeyfile folds the keyfile events into the state (part of Evolve).
func foldKeyfile(s State, e Event) State {
	k := &s.Keyfile
	switch e := e.(type) {
	case KeyfileRotationStarted:
		k.Request, k.Step, k.Rolling, k.Old, k.New = e.Request, 0, false, e.Old, ""
	case KeyfileRotationStep:
		k.Step, k.Rolling = e.Step, true
		k.Template = fmt.Sprintf("%s/%d", e.Request, e.Step)
		if e.Step == 1 && len(e.Keys) == 2 {
			k.New = e.Keys[1]
		}
	case KeyfileStepRolled:
		k.Rolling = false
	case KeyfileRotated:
		k.Request, k.Step, k.Rolling, k.Old, k.New = "", 0, false, "", ""
	}
	return s
}

// keyfileAnnouncement is the Kubernetes Event of a keyfile event: reason, message.
func keyfileAnnouncement(e Event) (reason, message string, ok bool) {
	switch e := e.(type) {
	case KeyfileRotationStarted:
		return e.Type(), fmt.Sprintf("keyfile rotation %s: key %s is replaced in %d steps, each a rolling restart",
			e.Request, e.Old, kube.KeyfileRotationSteps), true
	case KeyfileRotationStep:
		return e.Type(), fmt.Sprintf("keyfile rotation %s, step %d/%d: the Secret holds keys %v; members restart one at a time",
			e.Request, e.Step, kube.KeyfileRotationSteps, e.Keys), true
	case KeyfileRotated:
		return e.Type(), fmt.Sprintf("keyfile rotation %s done: every member runs key %s alone (was %s)", e.Request, e.New, e.Old), true
	}
	return "", "", false
}
