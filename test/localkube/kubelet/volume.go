package kubelet

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// apiSource is what volumes need from the API server besides Secrets and ConfigMaps.
type apiSource interface {
	objectSource
	// Token is a service account token bound to the pod (TokenRequest API).
	Token(pod *corev1.Pod, audience string, expirationSeconds int64) (string, error)
	// ClaimPath resolves a PersistentVolumeClaim to the directory of its bound
	// hostPath or local PersistentVolume.
	ClaimPath(namespace, claim string) (string, error)
}

// volumeFile is one file of a projected-style volume.
type volumeFile struct {
	Path string
	Data []byte
	Mode os.FileMode
}

func modeOr(m *int32, def os.FileMode) os.FileMode {
	if m != nil {
		return os.FileMode(*m)
	}
	return def
}

// keyFiles maps the data of a Secret or ConfigMap to files: every key, or only the
// listed items at their paths.
func keyFiles(data map[string][]byte, items []corev1.KeyToPath, mode os.FileMode, optional bool, what string) ([]volumeFile, error) {
	var out []volumeFile
	if len(items) == 0 {
		for _, k := range slices.Sorted(maps.Keys(data)) {
			out = append(out, volumeFile{k, data[k], mode})
		}
		return out, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, &configError{fmt.Sprintf("couldn't find key %s in %s", it.Key, what)}
		}
		out = append(out, volumeFile{it.Path, v, modeOr(it.Mode, mode)})
	}
	return out, nil
}

func configMapData(cm *corev1.ConfigMap) map[string][]byte {
	d := map[string][]byte{}
	for k, v := range cm.Data {
		d[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		d[k] = v
	}
	return d
}

func downwardFiles(pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, mode os.FileMode, nodeName, hostIP string) ([]volumeFile, error) {
	var out []volumeFile
	for _, it := range items {
		var v string
		var err error
		switch {
		case it.FieldRef != nil:
			v, err = podField(pod, it.FieldRef.FieldPath, nodeName, hostIP)
		case it.ResourceFieldRef != nil:
			c := &pod.Spec.Containers[0]
			v, err = resourceField(pod, c, it.ResourceFieldRef)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, volumeFile{it.Path, []byte(v), modeOr(it.Mode, mode)})
	}
	return out, nil
}

// volumeContent computes the files of a Secret, ConfigMap, downwardAPI or projected
// volume; ok is false for volume kinds that are directories, not content.
func volumeContent(pod *corev1.Pod, v *corev1.Volume, api apiSource, nodeName, hostIP string) ([]volumeFile, bool, error) {
	ns := pod.Namespace
	switch {
	case v.Secret != nil:
		s := v.Secret
		optional := s.Optional != nil && *s.Optional
		sec, err := api.Secret(ns, s.SecretName)
		if err != nil {
			if optional {
				return nil, true, nil
			}
			return nil, true, &configError{fmt.Sprintf("secret %q not found", s.SecretName)}
		}
		f, err := keyFiles(sec.Data, s.Items, modeOr(s.DefaultMode, 0o644), optional, "Secret "+s.SecretName)
		return f, true, err
	case v.ConfigMap != nil:
		c := v.ConfigMap
		optional := c.Optional != nil && *c.Optional
		cm, err := api.ConfigMap(ns, c.Name)
		if err != nil {
			if optional {
				return nil, true, nil
			}
			return nil, true, &configError{fmt.Sprintf("configmap %q not found", c.Name)}
		}
		f, err := keyFiles(configMapData(cm), c.Items, modeOr(c.DefaultMode, 0o644), optional, "ConfigMap "+c.Name)
		return f, true, err
	case v.DownwardAPI != nil:
		f, err := downwardFiles(pod, v.DownwardAPI.Items, modeOr(v.DownwardAPI.DefaultMode, 0o644), nodeName, hostIP)
		return f, true, err
	case v.Projected != nil:
		mode := modeOr(v.Projected.DefaultMode, 0o644)
		var out []volumeFile
		for _, src := range v.Projected.Sources {
			var f []volumeFile
			var err error
			switch {
			case src.Secret != nil:
				optional := src.Secret.Optional != nil && *src.Secret.Optional
				sec, gerr := api.Secret(ns, src.Secret.Name)
				if gerr != nil {
					if optional {
						continue
					}
					return nil, true, &configError{fmt.Sprintf("secret %q not found", src.Secret.Name)}
				}
				f, err = keyFiles(sec.Data, src.Secret.Items, mode, optional, "Secret "+src.Secret.Name)
			case src.ConfigMap != nil:
				optional := src.ConfigMap.Optional != nil && *src.ConfigMap.Optional
				cm, gerr := api.ConfigMap(ns, src.ConfigMap.Name)
				if gerr != nil {
					if optional {
						continue
					}
					return nil, true, &configError{fmt.Sprintf("configmap %q not found", src.ConfigMap.Name)}
				}
				f, err = keyFiles(configMapData(cm), src.ConfigMap.Items, mode, optional, "ConfigMap "+src.ConfigMap.Name)
			case src.DownwardAPI != nil:
				f, err = downwardFiles(pod, src.DownwardAPI.Items, mode, nodeName, hostIP)
			case src.ServiceAccountToken != nil:
				t := src.ServiceAccountToken
				exp := int64(3600)
				if t.ExpirationSeconds != nil {
					exp = *t.ExpirationSeconds
				}
				tok, terr := api.Token(pod, t.Audience, exp)
				if terr != nil {
					return nil, true, fmt.Errorf("service account token: %w", terr)
				}
				f = []volumeFile{{t.Path, []byte(tok), mode}}
			}
			if err != nil {
				return nil, true, err
			}
			out = append(out, f...)
		}
		return out, true, nil
	}
	return nil, false, nil
}

// writeVolumeFiles writes content into dir, each file replaced atomically so that a
// reader never sees half a token, with group fsGroup and group read when set.
func writeVolumeFiles(dir string, files []volumeFile, fsGroup *int64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		p := filepath.Join(dir, filepath.Clean("/"+f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		mode := f.Mode
		if fsGroup != nil {
			mode |= 0o040
		}
		if err := writeFileAtomic(p, f.Data, mode); err != nil {
			return err
		}
		if fsGroup != nil {
			if err := os.Chown(p, -1, int(*fsGroup)); err != nil {
				return err
			}
		}
	}
	return nil
}

// applyFSGroup gives a writable volume to fsGroup the way a kubelet does: group
// ownership, group rw, and setgid on directories so new files inherit the group.
func applyFSGroup(dir string, gid int64) error {
	return filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.Mode()&os.ModeSymlink != 0 {
			return nil
		}
		if err := os.Lchown(p, -1, int(gid)); err != nil {
			return err
		}
		mode := info.Mode().Perm() | 0o060
		if info.IsDir() {
			mode |= 0o010 | os.ModeSetgid
		}
		return os.Chmod(p, mode)
	})
}

// hostPathFor makes a hostPath volume's directory or file exist as its type asks.
func hostPathFor(h *corev1.HostPathVolumeSource) (string, error) {
	t := corev1.HostPathUnset
	if h.Type != nil {
		t = *h.Type
	}
	switch t {
	case corev1.HostPathDirectoryOrCreate:
		if err := os.MkdirAll(h.Path, 0o755); err != nil {
			return "", err
		}
	case corev1.HostPathFileOrCreate:
		if _, err := os.Stat(h.Path); os.IsNotExist(err) {
			if err := os.WriteFile(h.Path, nil, 0o644); err != nil {
				return "", err
			}
		}
	case corev1.HostPathUnset:
	default:
		if _, err := os.Stat(h.Path); err != nil {
			return "", &configError{fmt.Sprintf("hostPath %s: %v", h.Path, err)}
		}
	}
	return h.Path, nil
}

// containerMounts turns a container's volumeMounts into bind mounts from the pod's
// prepared volume paths.
func containerMounts(c *corev1.Container, volumes map[string]string) ([]mountSpec, error) {
	var out []mountSpec
	for _, m := range c.VolumeMounts {
		src, ok := volumes[m.Name]
		if !ok {
			return nil, &configError{fmt.Sprintf("volume %q not found", m.Name)}
		}
		if m.SubPath != "" {
			src = filepath.Join(src, filepath.Clean("/"+m.SubPath))
			if _, err := os.Stat(src); os.IsNotExist(err) {
				if err := os.MkdirAll(src, 0o755); err != nil {
					return nil, err
				}
			}
		}
		out = append(out, mountSpec{Source: src, Target: filepath.Clean("/" + m.MountPath), ReadOnly: m.ReadOnly})
	}
	return out, nil
}

// isContentVolume says whether a volume's files are written by the kubelet (and so
// refreshed) rather than being a directory the pod writes.
func isContentVolume(v *corev1.Volume) bool {
	return v.Secret != nil || v.ConfigMap != nil || v.DownwardAPI != nil || v.Projected != nil
}

func volumeDirName(name string) string { return strings.ReplaceAll(name, "/", "_") }
