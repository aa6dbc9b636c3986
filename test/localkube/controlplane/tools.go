//go:build tools

// Package controlplane pins the Kubernetes control-plane commands that localkube builds.
// Nothing imports it: the build tag keeps these imports in go.mod and go.sum so that
// `go build k8s.io/kubernetes/cmd/...` resolves from this module at pinned versions.
package controlplane

import (
	_ "github.com/coredns/coredns"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
