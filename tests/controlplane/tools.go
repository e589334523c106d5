//go:build tools

// Package tools records the main packages built from this module so that
// `go mod tidy` keeps their dependencies.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
