package cluster

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// ModulePath is the operator module; FindRepo looks for its go.mod.
const ModulePath = "github.com/mgors/operator"

// binaries are what Build produces: each built from the control-plane module, whose
// go.mod pins every version (k8s.io/kubernetes with its staging modules replaced by
// their published versions, etcd's embed server, CoreDNS).
var binaries = []struct{ name, pkg string }{
	{"etcd", "./etcd"},
	{"kube-apiserver", "k8s.io/kubernetes/cmd/kube-apiserver"},
	{"kube-controller-manager", "k8s.io/kubernetes/cmd/kube-controller-manager"},
	{"kube-scheduler", "k8s.io/kubernetes/cmd/kube-scheduler"},
	{"kubectl", "k8s.io/kubernetes/cmd/kubectl"},
	{"kube-proxy", "k8s.io/kubernetes/cmd/kube-proxy"},
	{"coredns", "github.com/coredns/coredns"},
}

// KubernetesVersion is the k8s.io/kubernetes version the control-plane module
// requires (a test keeps the two equal). It is stamped into the binaries, as the
// Kubernetes release build does, so that /version and `kubectl version` report it
// instead of "v0.0.0-master".
const KubernetesVersion = "v1.37.2"

// versionLDFlags sets the version variables of component-base and client-go; the
// linker ignores them in binaries that do not contain those packages.
func versionLDFlags() string {
	major, minor, _ := strings.Cut(strings.TrimPrefix(KubernetesVersion, "v"), ".")
	minor, _, _ = strings.Cut(minor, ".")
	var flags []string
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		flags = append(flags,
			"-X "+pkg+".gitVersion="+KubernetesVersion,
			"-X "+pkg+".gitMajor="+major,
			"-X "+pkg+".gitMinor="+minor,
			"-X "+pkg+".gitTreeState=clean",
			"-X "+pkg+".gitCommit=localkube")
	}
	return strings.Join(flags, " ")
}

// BuildOptions says where the control-plane module is and where binaries go.
type BuildOptions struct {
	// Source is the directory of the control-plane module (test/localkube/controlplane).
	Source string
	// BinDir receives the binaries and the stamp of what they were built from.
	BinDir string
	// Force rebuilds even when the stamp matches.
	Force bool
}

// FindRepo returns the root of the operator repository containing dir.
func FindRepo(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if f, err := os.Open(filepath.Join(d, "go.mod")); err == nil {
			sc := bufio.NewScanner(f)
			first := ""
			if sc.Scan() {
				first = strings.TrimSpace(sc.Text())
			}
			_ = f.Close()
			if first == "module "+ModulePath {
				return d, nil
			}
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no %s checkout above %s", ModulePath, dir)
		}
	}
}

// DefaultSource and DefaultBinDir are the paths inside a checkout.
func DefaultSource(repo string) string {
	return filepath.Join(repo, "test", "localkube", "controlplane")
}

// DefaultBinDir is where binaries go unless told otherwise; it is gitignored.
func DefaultBinDir(repo string) string { return filepath.Join(repo, ".cache", "localkube", "bin") }

// Build compiles the control-plane binaries into opts.BinDir. When the stamp (a hash
// of the module's go.mod, go.sum and Go sources, and the Go version) matches the
// one written by the last successful build and every binary is there, it returns at
// once; otherwise `go build` runs per binary with the shared build cache.
func Build(ctx context.Context, opts BuildOptions, log zerolog.Logger) error {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("the go command is needed to build the control plane: %w", err)
	}
	if err := os.MkdirAll(opts.BinDir, 0o755); err != nil {
		return err
	}
	goVersion, err := run(ctx, goTool, "env", "GOVERSION")
	if err != nil {
		return err
	}
	stamp, err := sourceStamp(opts.Source, strings.TrimSpace(goVersion)+"\n"+versionLDFlags())
	if err != nil {
		return err
	}
	stampFile := filepath.Join(opts.BinDir, ".stamp")
	if !opts.Force && upToDate(opts.BinDir, stampFile, stamp) {
		log.Info().Str("step", "build").Str("bin", opts.BinDir).Msg("control plane binaries up to date")
		return nil
	}
	_ = os.Remove(stampFile)
	began := time.Now()
	for i, b := range binaries {
		t := time.Now()
		log.Info().Str("step", "build").Str("binary", b.name).Msgf("building %d/%d (with an empty Go build cache the whole control plane takes 11-15 min on 2 cores; a warm cache about 2 min)", i+1, len(binaries))
		bctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
		cmd := exec.CommandContext(bctx, goTool, "build", "-trimpath", "-ldflags", versionLDFlags(), "-o", filepath.Join(opts.BinDir, b.name), b.pkg)
		cmd.Dir = opts.Source
		cmd.Env = append(os.Environ(), "GOWORK=off")
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			return fmt.Errorf("build %s: %w\n%s", b.name, err, out)
		}
		log.Info().Str("step", "build").Str("binary", b.name).Dur("took", time.Since(t)).Msg("built")
	}
	if err := os.WriteFile(stampFile, []byte(stamp+"\n"), 0o644); err != nil {
		return err
	}
	log.Info().Str("step", "build").Dur("took", time.Since(began)).Str("bin", opts.BinDir).Msg("control plane built")
	return nil
}

func upToDate(binDir, stampFile, stamp string) bool {
	b, err := os.ReadFile(stampFile)
	if err != nil || strings.TrimSpace(string(b)) != stamp {
		return false
	}
	for _, bin := range binaries {
		if !fileExists(filepath.Join(binDir, bin.name)) {
			return false
		}
	}
	return true
}

// sourceStamp hashes what decides the binaries' content: the module's go.mod, go.sum
// and Go files (the dependencies' content is fixed by go.sum), and the toolchain.
func sourceStamp(source, goVersion string) (string, error) {
	var files []string
	err := filepath.WalkDir(source, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if name := d.Name(); name == "go.mod" || name == "go.sum" || strings.HasSuffix(name, ".go") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if len(files) == 0 {
		return "", errors.New("no control-plane module at " + source)
	}
	sort.Strings(files)
	h := sha256.New()
	_, _ = fmt.Fprintf(h, "%s\n", goVersion)
	for _, f := range files {
		rel, _ := filepath.Rel(source, f)
		_, _ = fmt.Fprintf(h, "%s\n", rel)
		fh, err := os.Open(f)
		if err != nil {
			return "", err
		}
		_, err = io.Copy(h, fh)
		_ = fh.Close()
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
