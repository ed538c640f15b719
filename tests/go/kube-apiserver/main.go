// Command kube-apiserver is Kubernetes' own API server, built from the Go module proxy for the
// tests (tests/support/kube_api.py): the same main as k8s.io/kubernetes/cmd/kube-apiserver.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
