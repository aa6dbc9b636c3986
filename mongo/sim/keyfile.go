package sim

import (
	"fmt"
	"os"
	"strings"
	"syscall"

	"go.yaml.in/yaml/v3"
)

// KeyFileError is a keyfile mongod cannot use: it logs "Read security file
// failed" (20254) with InvalidPath and exits 1 ("Unable to acquire security key[s]").
type KeyFileError struct{ Msg string }

func (e *KeyFileError) Error() string { return e.Msg }

// loadKeyFile checks and reads a keyfile as mongod does at start-up.
func loadKeyFile(path string, relax bool) ([]string, error) {
	if err := checkKeyFilePerms(path, relax); err != nil {
		return nil, err
	}
	return readKeyFile(path)
}

// strerror is how mongod words an errno: capitalised, as C's strerror.
func strerror(err error) string {
	s := errText(err)
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// checkKeyFilePerms applies mongod's rule: a keyfile must not be readable by
// group or others; with --relaxPermChecks a file owned by root may be readable
// by its group (0440, 0640), as mounted Kubernetes Secrets often are.
func checkKeyFilePerms(path string, relax bool) error {
	st, err := os.Stat(path)
	if err != nil {
		return &KeyFileError{fmt.Sprintf("Error reading file %s: %s", path, strerror(err))}
	}
	forbidden := os.FileMode(0o077)
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && relax && sys.Uid == 0 {
		forbidden = 0o007
	}
	if st.Mode().Perm()&forbidden != 0 {
		return &KeyFileError{fmt.Sprintf("permissions on %s are too open", path)}
	}
	return nil
}

// readKeyFile returns the keys of a keyfile as mongod reads it: the file is
// YAML, either one string or (for key rotation) a sequence of at most two;
// whitespace inside a key is dropped, every other character must be base64,
// and each key has 6 to 1024 characters.
func readKeyFile(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &KeyFileError{fmt.Sprintf("error opening file: %s: bad file", path)}
	}
	var raw []string
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, &KeyFileError{fmt.Sprintf("Error while parsing YAML in security file %s: %v", path, err)}
	}
	switch {
	case len(doc.Content) == 0:
		raw = []string{""}
	case doc.Content[0].Kind == yaml.ScalarNode:
		raw = []string{doc.Content[0].Value}
	case doc.Content[0].Kind == yaml.SequenceNode:
		for _, n := range doc.Content[0].Content {
			if n.Kind != yaml.ScalarNode {
				return nil, &KeyFileError{fmt.Sprintf("Security file %s must contain a YAML string or a sequence of strings", path)}
			}
			raw = append(raw, n.Value)
		}
	default:
		return nil, &KeyFileError{fmt.Sprintf("Security file %s must contain a YAML string or a sequence of strings", path)}
	}
	if len(raw) > 2 {
		return nil, &KeyFileError{fmt.Sprintf("Only two keys are supported in the security key file, %d are specified in %s", len(raw), path)}
	}
	keys := make([]string, 0, len(raw))
	for _, r := range raw {
		key := strings.Map(func(c rune) rune {
			if c == ' ' || c >= '\t' && c <= '\r' {
				return -1
			}
			return c
		}, r)
		for _, c := range key {
			if (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '+' && c != '/' && c != '=' {
				return nil, &KeyFileError{fmt.Sprintf("invalid char in key file %s: %c", path, c)}
			}
		}
		if len(key) < 6 || len(key) > 1024 {
			return nil, &KeyFileError{fmt.Sprintf(" security key in %s has length %d, must be between 6 and 1024 chars", path, len(key))}
		}
		keys = append(keys, key)
	}
	return keys, nil
}
