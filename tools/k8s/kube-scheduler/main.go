// Command kube-scheduler is Kubernetes' default scheduler, built unchanged from its published
// module (the extender tests run it in front of schedlab's extender).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand()))
}
