package kubelet

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mgors/operator/test/localkube/images"
	"sigs.k8s.io/yaml"
)

// Image is one entry of the image table: a local directory overlaid on the host's
// root stands in for the image, with the image's config (user, entrypoint, cmd, env).
type Image struct {
	Name         string   `json:"name"`
	Repositories []string `json:"repositories"`
	// Dir is the image directory: a built-in name (mongo, operator, s3) assembled by the
	// kubelet, or an absolute path. Its files and symlinks are mounted over the host
	// root at the same paths; a symlink mounts what it points to.
	Dir        string   `json:"dir"`
	User       string   `json:"user,omitempty"`
	Group      string   `json:"group,omitempty"`
	Entrypoint []string `json:"entrypoint,omitempty"`
	Cmd        []string `json:"cmd,omitempty"`
	WorkingDir string   `json:"workingDir,omitempty"`
	// Versions, for an image whose tags name a release, maps each release line
	// ("8.0") to its newest release ("8.0.4"): a container gets MONGO_MAJOR and
	// MONGO_VERSION for its tag, as the official mongo images set them, and a tag of
	// a release not listed fails to pull (ErrImagePull).
	Versions map[string]string `json:"versions,omitempty"`
	Env      []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"env,omitempty"`
}

// imageTable maps normalised repositories to images.
type imageTable struct {
	byRepo map[string]*Image
}

// defaultPath is the PATH a container runtime gives a container whose image sets none.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// parseImageTable reads tables in order; a later table's entry wins for a repository
// both name.
func parseImageTable(docs ...[]byte) (*imageTable, error) {
	t := &imageTable{byRepo: map[string]*Image{}}
	for _, doc := range docs {
		var f struct {
			Images []Image `json:"images"`
		}
		if err := yaml.UnmarshalStrict(doc, &f); err != nil {
			return nil, fmt.Errorf("image table: %w", err)
		}
		for i := range f.Images {
			img := f.Images[i]
			if img.Name == "" || len(img.Repositories) == 0 {
				return nil, fmt.Errorf("image table: entry %d needs a name and repositories", i)
			}
			for _, r := range img.Repositories {
				t.byRepo[normalizeRepository(r)] = &img
			}
		}
	}
	return t, nil
}

func loadImageTable(extra string) (*imageTable, error) {
	docs := [][]byte{images.Table}
	if extra != "" {
		b, err := os.ReadFile(extra)
		if err != nil {
			return nil, err
		}
		docs = append(docs, b)
	}
	return parseImageTable(docs...)
}

// Lookup returns the image for a reference, nil for an unknown image.
func (t *imageTable) Lookup(ref string) *Image {
	return t.byRepo[normalizeRepository(ref)]
}

// splitReference splits an image reference into its normalised repository and its
// tag or digest, as a container runtime reads it: short names live on docker.io,
// single-component names in its "library" namespace, no tag means "latest".
func splitReference(ref string) (repo, tagOrDigest string) {
	ref = strings.TrimSpace(ref)
	digest := ""
	if i := strings.IndexByte(ref, '@'); i >= 0 {
		ref, digest = ref[:i], ref[i:]
	}
	tag := ""
	if i := strings.LastIndexByte(ref, ':'); i > strings.LastIndexByte(ref, '/') {
		ref, tag = ref[:i], ":"+ref[i+1:]
	}
	parts := strings.Split(ref, "/")
	first := parts[0]
	if len(parts) == 1 || (!strings.ContainsAny(first, ".:") && first != "localhost") {
		if len(parts) == 1 {
			ref = "library/" + ref
		}
		ref = "docker.io/" + ref
	}
	if strings.HasPrefix(ref, "index.docker.io/") {
		ref = "docker.io/" + strings.TrimPrefix(ref, "index.docker.io/")
	}
	switch {
	case digest != "":
		return strings.ToLower(ref), digest
	case tag != "":
		return strings.ToLower(ref), tag
	}
	return strings.ToLower(ref), ":latest"
}

func normalizeRepository(ref string) string {
	r, _ := splitReference(ref)
	return r
}

// normalizeReference is the image as a kubelet reports it in a container status.
func normalizeReference(ref string) string {
	r, t := splitReference(ref)
	return r + t
}

// imageID is what containerStatuses[].imageID says: the image and where it came from.
func imageID(ref string, img *Image) string {
	if img == nil {
		return "localkube://host-root"
	}
	return "localkube://" + img.Name + "@" + normalizeRepository(ref)
}

// imageSources names where the kubelet finds what built-in image directories hold.
type imageSources struct {
	BinDir     string // mongod-sim, mgors-operator, mgors-s3
	MongodBin  string // a real mongod, preferred over mongod-sim when set
	MongoshDir string // an npm prefix with node_modules/mongosh
}

// exists reports whether path can be stat'ed: an image binary that cannot is
// left out of its image as missing.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// assembleImages builds the built-in image directories under root: symlinks to the
// binaries they hold (mounted over the host root at container start), plus a
// mongosh wrapper. A missing binary leaves its link out and is logged by the caller.
func assembleImages(root string, src imageSources) (map[string]string, []string, error) {
	var missing []string
	dirs := map[string]string{}
	link := func(dir, rel, target string) error {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		_ = os.Remove(p)
		if target == "" || !exists(target) {
			missing = append(missing, rel)
			return nil
		}
		return os.Symlink(target, p)
	}
	binary := func(name string) string {
		if src.BinDir == "" {
			return ""
		}
		return filepath.Join(src.BinDir, name)
	}

	mongo := filepath.Join(root, "mongo")
	mongod := src.MongodBin
	if mongod == "" {
		mongod = binary("mongod-sim")
	}
	if err := link(mongo, "usr/bin/mongod", mongod); err != nil {
		return nil, nil, err
	}
	if src.MongoshDir != "" {
		if err := link(mongo, "opt/mongosh", src.MongoshDir); err != nil {
			return nil, nil, err
		}
		wrapper := "#!/bin/sh\nexec node /opt/mongosh/node_modules/mongosh/bin/mongosh.js \"$@\"\n"
		if err := os.WriteFile(filepath.Join(mongo, "usr/bin/mongosh"), []byte(wrapper), 0o755); err != nil {
			return nil, nil, err
		}
	} else {
		missing = append(missing, "usr/bin/mongosh")
	}
	// The official images' entrypoint runs mongod when the pod passes only options.
	entry := "#!/bin/sh\n# localkube's stand-in for the mongo images' entrypoint: options alone run mongod.\ncase \"$1\" in -*) set -- mongod \"$@\" ;; esac\nexec \"$@\"\n"
	if err := os.MkdirAll(filepath.Join(mongo, "usr/local/bin"), 0o755); err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(filepath.Join(mongo, "usr/local/bin/docker-entrypoint.sh"), []byte(entry), 0o755); err != nil {
		return nil, nil, err
	}
	dirs["mongo"] = mongo

	op := filepath.Join(root, "operator")
	if err := link(op, "usr/local/bin/mgors-operator", binary("mgors-operator")); err != nil {
		return nil, nil, err
	}
	dirs["operator"] = op

	s3 := filepath.Join(root, "s3")
	if err := link(s3, "usr/local/bin/mgors-s3", binary("mgors-s3")); err != nil {
		return nil, nil, err
	}
	dirs["s3"] = s3
	return dirs, missing, nil
}
