// Package e2e is upstream's e2e.test with only the network tests: the
// `[sig-network]` specs of k8s.io/kubernetes/test/e2e/network at the version
// go.mod pins (the Kubernetes version skylb ships), run by test/conformance
// against skylb in the real cluster. The flags and the start are those of
// upstream's test/e2e/e2e_test.go.
//
//	go test -c -o e2e.test .
//	./e2e.test --provider=skeleton --kubeconfig=... --ginkgo.focus='\[Feature:LoadBalancer\]'
package e2e

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"k8s.io/component-base/version"
	"k8s.io/kubernetes/test/e2e"
	"k8s.io/kubernetes/test/e2e/framework"
	"k8s.io/kubernetes/test/e2e/framework/config"
	"k8s.io/kubernetes/test/e2e/framework/testfiles"
	e2etestingmanifests "k8s.io/kubernetes/test/e2e/testing-manifests"
	testfixtures "k8s.io/kubernetes/test/fixtures"

	// Define and freeze the feature and label constants.
	_ "k8s.io/kubernetes/test/e2e/feature"

	// The test sources: the network specs only.
	_ "k8s.io/kubernetes/test/e2e/network"

	// Reconfigure the framework as upstream's e2e.test does.
	_ "k8s.io/kubernetes/test/e2e/framework/debug/init"
	_ "k8s.io/kubernetes/test/e2e/framework/metrics/init"
	_ "k8s.io/kubernetes/test/e2e/framework/node/init"
	_ "k8s.io/kubernetes/test/utils/format"
)

func TestMain(m *testing.M) {
	var versionFlag bool
	flag.CommandLine.BoolVar(&versionFlag, "version", false, "Displays version information.")
	config.CopyFlags(config.Flags, flag.CommandLine)
	framework.RegisterCommonFlags(flag.CommandLine)
	framework.RegisterClusterFlags(flag.CommandLine)
	flag.Parse()
	if versionFlag {
		fmt.Printf("%s\n", version.Get())
		os.Exit(0)
	}
	if flag.CommandLine.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "unknown additional command line arguments: %s", flag.CommandLine.Args())
		os.Exit(1)
	}
	testfiles.AddFileSource(e2etestingmanifests.GetE2ETestingManifestsFS())
	testfiles.AddFileSource(testfixtures.GetTestFixturesFS())
	framework.AfterReadingAllFlags(&framework.TestContext)
	os.Exit(m.Run())
}

func TestE2E(t *testing.T) {
	e2e.RunE2ETests(t)
}
