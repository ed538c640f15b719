module github.com/centrality/tests/go/crds

go 1.24.0

require (
	github.com/kubeflow/training-operator v1.8.1
	github.com/ray-project/kuberay/ray-operator v1.5.0
	sigs.k8s.io/jobset v0.10.1
)
