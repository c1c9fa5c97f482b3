// Package source turns Kubernetes objects into publications: the names an object
// claims and the addresses those names should resolve to. It reads only the
// objects it is given; it talks to no server.
package source
