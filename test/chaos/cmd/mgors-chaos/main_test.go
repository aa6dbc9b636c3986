package main

import (
	"testing"
	"time"

	"github.com/mgors/operator/test/chaos"
)

func TestConfigFromEnvironment(t *testing.T) {
	env := map[string]string{"CHAOS_DURATION": "3m", "CHAOS_SEED": "42", "CHAOS_FAULTS": "kill-mongod, pause-primary"}
	cfg, err := config(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Duration != 3*time.Minute || cfg.Seed != 42 || len(cfg.Kinds) != 2 || cfg.Kinds[1] != chaos.PausePrimary {
		t.Fatalf("config %+v", cfg)
	}
	def, err := config(func(string) string { return "" })
	if err != nil || def.Duration != 10*time.Minute || len(def.Kinds) != len(chaos.FaultKinds) || def.Restore != chaos.RestoreCluster {
		t.Fatalf("defaults %+v %v", def, err)
	}
	for _, bad := range []map[string]string{{"CHAOS_DURATION": "ten"}, {"CHAOS_SEED": "x"}, {"CHAOS_FAULTS": "kill-everything"}, {"CHAOS_FAULTS": ","}} {
		if _, err := config(func(k string) string { return bad[k] }); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
