package stack

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// viewExampleExpr is the client networks of coredns/internal.view.example.
const viewExampleExpr = "expr incidr(client_ip(), '10.0.0.0/8') || incidr(client_ip(), '192.168.0.0/16')"

// ViewCorefile writes into dir the shipped Corefile (coredns/Corefile under
// root) and, beside it, a file NAME.view for each view of views (name ->
// client network, a CIDR): ViewBlock's. It returns the Corefile's path, for
// Options.Corefile or StartCoreDNS.
func ViewCorefile(root, dir string, views map[string]string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	corefile, err := os.ReadFile(filepath.Join(root, "coredns", "Corefile"))
	if err != nil {
		return "", err
	}
	for name, cidr := range views {
		block, err := ViewBlock(root, name, cidr)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, name+".view"), []byte(block), 0o644); err != nil {
			return "", err
		}
	}
	path := filepath.Join(dir, "Corefile")
	return path, os.WriteFile(path, corefile, 0o644)
}

// ViewBlock returns the server block of a view whose clients are those of
// the network cidr: coredns/internal.view.example under root with the
// view's name and network, as coredns/README.md tells operators to write
// it.
func ViewBlock(root, name, cidr string) (string, error) {
	example, err := os.ReadFile(filepath.Join(root, "coredns", "internal.view.example"))
	if err != nil {
		return "", err
	}
	for _, want := range []string{viewExampleExpr, "view internal {", "path /skydns-internal\n"} {
		if !strings.Contains(string(example), want) {
			return "", fmt.Errorf("coredns/internal.view.example has no %q", want)
		}
	}
	return strings.NewReplacer(
		viewExampleExpr, "expr incidr(client_ip(), '"+cidr+"')",
		"view internal {", "view "+name+" {",
		"path /skydns-internal\n", "path /skydns-"+name+"\n",
	).Replace(string(example)), nil
}
