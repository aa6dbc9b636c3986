// Command mongod-sim is a stand-in for mongod: it takes mongod's command
// line and serves the wire protocol as a replica-set member (see
// docs/design/mongod-sim.md). Wiring only; the behaviour is in mongo/sim.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/rs/zerolog"

	"github.com/mgors/operator/mongo/sim"
)

// Exit codes are mongod's: EXIT_BADOPTIONS 2, DBPathInUse/NonExistentPath 100, listen failure 48,
// EXIT_NEED_DOWNGRADE 62.
const (
	exitBadOptions = 2
	exitNetError   = 48
	exitDBPath     = 100
	// exitNeedDowngrade is mongod's EXIT_NEED_DOWNGRADE: the data's FCV is newer than the binary.
	exitNeedDowngrade = 62
)

func main() {
	// A mongod binary has its version built in; the image that holds
	// mongod-sim names it in MONGO_VERSION, as the official images do.
	version := sim.Version
	if v := os.Getenv("MONGO_VERSION"); v != "" {
		var err error
		if version, err = sim.ResolveVersion(v); err != nil {
			fmt.Fprintln(os.Stderr, err.Error())
			os.Exit(1)
		}
	}
	cfg, err := sim.ParseArgsAs(version, os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err.Error())
		os.Exit(exitBadOptions)
	}
	if cfg.ShowVersion {
		fmt.Print(cfg.VersionText())
		return
	}
	if cfg.ShowHelp {
		fmt.Print(cfg.HelpText())
		return
	}
	if cfg.Shutdown {
		os.Exit(sim.ShutdownRunning(cfg.DBPath, os.Stdout))
	}
	if cfg.Fork {
		os.Exit(sim.Fork(os.Args, cfg, os.Stdout))
	}
	out := os.Stdout
	if cfg.LogPath != "" {
		flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
		if cfg.LogAppend {
			flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
		}
		f, err := os.OpenFile(cfg.LogPath, flags, 0o600)
		if err != nil {
			fmt.Fprintf(os.Stderr, "logpath (%s) should name a file, not a directory or an unwritable path: %v\n", cfg.LogPath, err)
			os.Exit(exitBadOptions)
		}
		defer func() { _ = f.Close() }()
		out = f
	}
	// The log also feeds getLog's RAM logs, as mongod's does.
	log := zerolog.New(io.MultiWriter(out, sim.RAMLog))
	node, err := sim.NewNode(cfg, log)
	if err != nil {
		fail(log, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := node.Run(ctx); err != nil {
		fail(log, err)
	}
}

func fail(log zerolog.Logger, err error) {
	code := 1
	var dbp *sim.DBPathError
	var le *sim.ListenError
	var fe *sim.FCVError
	var ke *sim.KeyFileError
	switch {
	case errors.As(err, &ke):
		// mongod's two lines for an unusable keyfile, then exit 1
		log.Log().Str("s", "I").Str("c", "ACCESS").Int("id", 20254).Str("ctx", "main").Str("msg", "Read security file failed").
			Dict("attr", zerolog.Dict().Dict("error", zerolog.Dict().Int("code", 30).Str("codeName", "InvalidPath").Str("errmsg", ke.Msg))).Send()
		log.Log().Str("s", "F").Str("c", "CONTROL").Int("id", 20575).Str("ctx", "main").Str("msg", "Error creating service context").
			Dict("attr", zerolog.Dict().Str("error", "Location5579201: Unable to acquire security key[s]")).Send()
		os.Exit(1)
	case errors.As(err, &fe):
		code = exitNeedDowngrade
	case errors.Is(err, sim.ErrBadOptions):
		code = exitBadOptions
	case errors.As(err, &dbp):
		code = exitDBPath
	case errors.As(err, &le):
		code = exitNetError
	}
	log.Log().Str("s", "F").Str("c", "CONTROL").Int("id", 20557).Str("msg", "Fatal error; exiting").
		Dict("attr", zerolog.Dict().Str("err", err.Error()).Int("exitCode", code)).Send()
	os.Exit(code)
}
