package main

import (
	"testing"
)

func TestKubeletConfigRejectsUnknownFields(t *testing.T) {
	tests := []struct {
		name    string
		json    string
		wantErr bool
	}{
		{"known fields", `{"nodeName":"localkube-1","port":10251,"apiServerPort":443}`, false},
		{"unknown field", `{"nodeName":"localkube-1","nodeIPs":["10.244.0.1"]}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := decodeKubeletConfig([]byte(tt.json))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && cfg.NodeName != "localkube-1" {
				t.Errorf("nodeName = %q", cfg.NodeName)
			}
		})
	}
}
