// Command localkube builds, starts, inspects and stops a one-machine Kubernetes
// cluster made of the official control-plane components and process kubelets,
// for the operator's end-to-end tests. See docs/design/localkube.md.
//
//	localkube build [--bin DIR] [--force]
//	localkube up --dir DIR [--nodes N] [--bin DIR] [--kube-proxy=false] [--image-table FILE]
//	             [--workload-bin DIR] [--mongosh-dir DIR] [--mongod-bin FILE]
//	localkube down --dir DIR [--purge]
//	localkube status --dir DIR
//	localkube fault VERB ... --dir DIR  (kill, pause, resume, partition, heal,
//	                                     node-down, node-up, restart-control-plane)
//	localkube kubelet --config FILE      (started by up, one per Node)
//	localkube provisioner --dir DIR      (started by up)
//	localkube loadbalancer --dir DIR     (started by up)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/mgors/operator/test/localkube/cluster"
)

func main() {
	zerolog.TimeFieldFormat = time.RFC3339Nano
	log := zerolog.New(os.Stderr).With().Timestamp().Str("cmd", "localkube").Logger()
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	sub, args := os.Args[1], os.Args[2:]
	switch sub {
	case "build":
		err = buildCmd(ctx, args, log)
	case "up":
		err = upCmd(ctx, args, log)
	case "down":
		err = downCmd(ctx, args, log)
	case "status":
		err = statusCmd(ctx, args)
	case "fault":
		if err := faultCmd(ctx, args, log); err != nil {
			fmt.Fprintln(os.Stderr, "localkube fault:", err)
			os.Exit(1)
		}
	case "kubelet":
		err = kubeletCmd(ctx, args, log)
	case "provisioner":
		err = provisionerCmd(ctx, args, log)
	case "loadbalancer":
		err = loadBalancerCmd(ctx, args, log)
	case "help", "-h", "--help":
		usage()
	default:
		fmt.Fprintf(os.Stderr, "localkube: unknown command %q\n", sub)
		usage()
		os.Exit(2)
	}
	if err != nil {
		log.Error().Err(err).Str("subcommand", os.Args[1]).Msg("failed")
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `usage:
  localkube build [--bin DIR] [--force]
  localkube up --dir DIR [--nodes N] [--bin DIR] [--kube-proxy=false] [--image-table FILE] [--workload-bin DIR]
               [--mongosh-dir DIR] [--mongod-bin FILE]
  localkube down --dir DIR [--purge]
  localkube status --dir DIR
`+faultUsage+`  localkube kubelet --config FILE      (started by up, one per Node)
  localkube provisioner --dir DIR      (started by up)
  localkube loadbalancer --dir DIR     (started by up)
`)
}

// repoDefaults finds the checkout localkube runs in, for the default source and
// bin directories.
func repoDefaults() (source, binDir string, err error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", "", err
	}
	repo, err := cluster.FindRepo(wd)
	if err != nil {
		return "", "", err
	}
	return cluster.DefaultSource(repo), cluster.DefaultBinDir(repo), nil
}

func buildCmd(ctx context.Context, args []string, log zerolog.Logger) error {
	fs := flag.NewFlagSet("build", flag.ExitOnError)
	binDir := fs.String("bin", "", "where the binaries go (default <repo>/.cache/localkube/bin)")
	force := fs.Bool("force", false, "rebuild even if the stamp matches")
	_ = fs.Parse(args)
	source, defBin, err := repoDefaults()
	if err != nil {
		return err
	}
	if *binDir == "" {
		*binDir = defBin
	}
	return cluster.Build(ctx, cluster.BuildOptions{Source: source, BinDir: *binDir, Force: *force}, log)
}

func upCmd(ctx context.Context, args []string, log zerolog.Logger) error {
	fs := flag.NewFlagSet("up", flag.ExitOnError)
	dir := fs.String("dir", "", "cluster directory (required)")
	nodes := fs.Int("nodes", -1, "number of Nodes (default 3, or what DIR had)")
	binDir := fs.String("bin", "", "control-plane binaries (default <repo>/.cache/localkube/bin, built if needed)")
	proxy := fs.Bool("kube-proxy", true, "run kube-proxy (nftables mode) for Service cluster IPs")
	images := fs.String("image-table", "", "image table handed to the kubelets")
	workloads := fs.String("workload-bin", "", "programs the built-in images carry (default <repo>/bin)")
	mongosh := fs.String("mongosh-dir", os.Getenv("MONGOSH_DIR"), "npm prefix with node_modules/mongosh for the mongo images (default $MONGOSH_DIR, else <repo>/.cache/mongosh)")
	mongod := fs.String("mongod-bin", os.Getenv("MONGOD_BIN"), "a real mongod for the mongo images instead of mongod-sim (default $MONGOD_BIN)")
	_ = fs.Parse(args)
	if *dir == "" {
		return errors.New("--dir is required")
	}
	opts := cluster.Options{Dir: *dir, Nodes: *nodes, BinDir: *binDir, KubeProxy: *proxy, ImageTable: *images, WorkloadBin: *workloads,
		MongoshDir: *mongosh, MongodBin: *mongod}
	if source, defBin, err := repoDefaults(); err == nil {
		opts.Source = source
		if opts.BinDir == "" {
			opts.BinDir = defBin
		}
		if opts.WorkloadBin == "" {
			// `make build` puts mongod-sim and mgors-operator into <repo>/bin.
			opts.WorkloadBin = filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(source))), "bin")
		}
		if opts.MongoshDir == "" {
			// `make kubelet-mongosh` installs the shell there.
			if d := filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(source))), ".cache", "mongosh"); fileExists(d) {
				opts.MongoshDir = d
			}
		}
	} else if opts.BinDir == "" && !fileExists(filepath.Join(*dir, "cluster.json")) {
		return fmt.Errorf("outside a checkout pass --bin: %w", err)
	}
	if err := cluster.Up(ctx, opts, log); err != nil {
		return err
	}
	abs, _ := filepath.Abs(*dir)
	fmt.Printf("export KUBECONFIG=%s\n", filepath.Join(abs, "kubeconfig"))
	fmt.Printf("# kubectl: %s\n", filepath.Join(abs, "bin", "kubectl"))
	return nil
}

func downCmd(ctx context.Context, args []string, log zerolog.Logger) error {
	fs := flag.NewFlagSet("down", flag.ExitOnError)
	dir := fs.String("dir", "", "cluster directory (required)")
	purge := fs.Bool("purge", false, "also remove the cluster directory")
	_ = fs.Parse(args)
	if *dir == "" {
		return errors.New("--dir is required")
	}
	// Down must finish even when the caller is interrupted: a half-stopped cluster
	// leaves processes and links behind.
	return cluster.Down(context.WithoutCancel(ctx), *dir, *purge, log)
}

func statusCmd(ctx context.Context, args []string) error {
	dir, err := dirFlag("status", args)
	if err != nil {
		return err
	}
	return cluster.PrintStatus(ctx, os.Stdout, dir)
}

func provisionerCmd(ctx context.Context, args []string, log zerolog.Logger) error {
	dir, err := dirFlag("provisioner", args)
	if err != nil {
		return err
	}
	return cluster.RunProvisioner(ctx, dir, log.With().Str("component", "provisioner").Logger())
}

func loadBalancerCmd(ctx context.Context, args []string, log zerolog.Logger) error {
	dir, err := dirFlag("loadbalancer", args)
	if err != nil {
		return err
	}
	return cluster.RunLoadBalancer(ctx, dir, log.With().Str("component", "loadbalancer").Logger())
}

// dirFlag parses the only flag of the subcommand name, --dir, which it needs.
func dirFlag(name string, args []string) (string, error) {
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	dir := fs.String("dir", "", "cluster directory (required)")
	_ = fs.Parse(args)
	if *dir == "" {
		return "", errors.New("--dir is required")
	}
	return *dir, nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
