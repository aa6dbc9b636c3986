package kubelet

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// pullError is an image reference the kubelet cannot pull: the waiting reason
// is ErrImagePull, then ImagePullBackOff; every pass retries it.
type pullError struct{ ref, msg string }

func (e *pullError) Error() string {
	return fmt.Sprintf("failed to pull and unpack image %q: %s", normalizeReference(e.ref), e.msg)
}

// imageVersion is the release a tag of a versioned image holds: "8.0" and "8"
// name their line's newest release, "7.0.14" itself, "latest" (or a digest)
// the newest line's; a suffix such as "-jammy" is the base image and ignored.
// A release the image table does not list has no image to pull.
func imageVersion(ref string, versions map[string]string) (string, error) {
	_, tag := splitReference(ref)
	lines := make([]string, 0, len(versions))
	for l := range versions {
		lines = append(lines, l)
	}
	sort.Slice(lines, func(i, j int) bool { return lineLess(lines[j], lines[i]) }) // newest first
	if !strings.HasPrefix(tag, ":") || tag == ":latest" {
		return versions[lines[0]], nil
	}
	v, _, _ := strings.Cut(strings.TrimPrefix(tag, ":"), "-")
	parts := strings.Split(v, ".")
	for _, p := range parts {
		if _, err := strconv.Atoi(p); err != nil {
			return "", &pullError{ref, "not found"}
		}
	}
	switch len(parts) {
	case 1:
		for _, l := range lines {
			if strings.HasPrefix(l, parts[0]+".") {
				return versions[l], nil
			}
		}
	case 2:
		if r, ok := versions[v]; ok {
			return r, nil
		}
	case 3:
		if _, ok := versions[parts[0]+"."+parts[1]]; ok {
			return v, nil
		}
	}
	return "", &pullError{ref, "not found"}
}

// versionEnv is what the official mongo images set for their release.
func versionEnv(v string) []envVar {
	parts := strings.SplitN(v, ".", 3)
	return []envVar{{"MONGO_MAJOR", parts[0] + "." + parts[1]}, {"MONGO_VERSION", v}}
}

// lineLess orders "6.0" < "7.0" < "8.0" < "10.0" numerically.
func lineLess(a, b string) bool {
	am, an, _ := strings.Cut(a, ".")
	bm, bn, _ := strings.Cut(b, ".")
	x, _ := strconv.Atoi(am)
	y, _ := strconv.Atoi(bm)
	if x != y {
		return x < y
	}
	x, _ = strconv.Atoi(an)
	y, _ = strconv.Atoi(bn)
	return x < y
}

// retriedEachPass says whether a waiting reason is a start that failed before
// any process ran, which the kubelet retries on every pass rather than backing off.
func retriedEachPass(reason string) bool {
	return reason == "CreateContainerConfigError" || reason == "ErrImagePull" || reason == "ImagePullBackOff"
}
