//go:build tools

// Package hack pins, in go.mod, the code generator hack/update-codegen.sh runs.
package hack

import _ "k8s.io/code-generator"
