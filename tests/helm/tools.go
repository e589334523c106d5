//go:build tools

// Package tools records the main package built from this module (helm) so that
// `go mod tidy` keeps its dependencies.
package tools

import _ "helm.sh/helm/v4/cmd/helm"
