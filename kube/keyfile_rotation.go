package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// Keyfile rotation (docs/design/security.md, "Rotating the keyfile"): the
// keyfile Secret holds one key, or while a key rotates a YAML sequence of
// two that mongod reads as [first, second]. Every member accepts any key of
// its keyfile and authenticates with the first (then the second). The
// operator writes the Secret in three steps, each followed by a rolling
// restart: [old, new], [new, old], [new].

// KeyfileRotationSteps is the number of Secret writes of a rotation.
const KeyfileRotationSteps = 3

// KeyfileRotationAnnotation, on the copy of a Mgors the operator builds
// objects from (never on the object in the API), names the rotation step
// whose keyfile the members must run ("<request>/<step>"): the init
// container's environment holds it, so the pod template changes and a
// rolling restart takes the members onto the Secret as written (the init
// container copies the keyfile at start; mongod reads it then).
const KeyfileRotationAnnotation = "mgors.io/keyfile-rotation"

func keyfileEnv(m *v1alpha1.Mgors) []corev1.EnvVar {
	step := m.Annotations[KeyfileRotationAnnotation]
	if step == "" {
		return nil
	}
	return []corev1.EnvVar{{Name: "MGORS_KEYFILE_ROTATION", Value: step}}
}

// KeyFingerprint is a short public name of a key: the first 8 hexadecimal
// digits of its SHA-256, for events and logs (never the key).
func KeyFingerprint(key string) string { return Fingerprint([]byte(key)) }

// KeyfileKeys are the keys of a keyfile as mongod reads it: one YAML string
// or a sequence of strings, whitespace inside a key dropped. The error never
// quotes the data.
func KeyfileKeys(data []byte) ([]string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("the keyfile is not YAML")
	}
	var raw []string
	switch {
	case len(doc.Content) == 0:
	case doc.Content[0].Kind == yaml.ScalarNode:
		raw = []string{doc.Content[0].Value}
	case doc.Content[0].Kind == yaml.SequenceNode:
		for _, n := range doc.Content[0].Content {
			if n.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("the keyfile must hold a string or a sequence of strings")
			}
			raw = append(raw, n.Value)
		}
	default:
		return nil, fmt.Errorf("the keyfile must hold a string or a sequence of strings")
	}
	var keys []string
	for _, r := range raw {
		if k := strings.Join(strings.Fields(r), ""); k != "" {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 || len(keys) > 2 {
		return nil, fmt.Errorf("the keyfile holds %d keys, mongod accepts one or two", len(keys))
	}
	return keys, nil
}

// KeyfileFingerprints are the fingerprints of the keys of a keyfile, in order.
func KeyfileFingerprints(data []byte) ([]string, error) {
	keys, err := KeyfileKeys(data)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = KeyFingerprint(k)
	}
	return out, nil
}

// keyfileData is the Secret value of keys: the key alone, or a YAML
// sequence of two quoted keys (base64 needs no escaping inside quotes).
func keyfileData(keys []string) []byte {
	if len(keys) == 1 {
		return []byte(keys[0])
	}
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "- '%s'\n", k)
	}
	return []byte(b.String())
}

// KeyfileStepShape says whether the fingerprints fps are the keyfile of
// rotation step (1: [old, any], 2: [new, old], 3: [new]) from old to next
// (next "" when not yet known: step 1).
func KeyfileStepShape(step int, fps []string, old, next string) bool {
	switch step {
	case 1:
		return len(fps) == 2 && fps[0] == old && fps[1] != old && (next == "" || fps[1] == next)
	case 2:
		return slices.Equal(fps, []string{next, old})
	case 3:
		return slices.Equal(fps, []string{next})
	}
	return false
}

// RotateKeyfile writes step of a keyfile rotation of m from the key whose
// fingerprint is old to the one whose fingerprint is next ("" at step 1,
// where the new key is generated): [old, new], then [new, old], then [new].
// A Secret already in the step's shape is left alone (a write whose result
// was lost); one in another shape is an error that names fingerprints only.
// The write is bound to the resourceVersion read.
func (a *Applier) RotateKeyfile(ctx context.Context, m *v1alpha1.Mgors, step int, old, next string) error {
	name := m.KeyfileSecretName()
	c := a.Client.CoreV1().Secrets(m.Namespace)
	cur, err := bounded(ctx, a, func(ctx context.Context) (*corev1.Secret, error) {
		return c.Get(ctx, name, metav1.GetOptions{})
	})
	if err != nil {
		return err
	}
	keys, err := KeyfileKeys(cur.Data[v1alpha1.KeyfileSecretKey])
	if err != nil {
		return fmt.Errorf("keyfile Secret %s: %w", name, err)
	}
	fps := make([]string, len(keys))
	for i, k := range keys {
		fps[i] = KeyFingerprint(k)
	}
	if KeyfileStepShape(step, fps, old, next) {
		return nil
	}
	var want []string
	switch {
	case step == 1 && slices.Equal(fps, []string{old}):
		key, err := GenerateKeyfile()
		if err != nil {
			return err
		}
		want = []string{keys[0], key}
	case step == 2 && slices.Equal(fps, []string{old, next}):
		want = []string{keys[1], keys[0]}
	case step == 3 && slices.Equal(fps, []string{next, old}):
		want = []string{keys[0]}
	default:
		return fmt.Errorf("keyfile Secret %s holds keys %s: not the keyfile before step %d of the rotation from %s to %s",
			name, strings.Join(fps, ","), step, old, next)
	}
	return a.patchSecretData(ctx, m.Namespace, name, cur.ResourceVersion, map[string][]byte{v1alpha1.KeyfileSecretKey: keyfileData(want)})
}
