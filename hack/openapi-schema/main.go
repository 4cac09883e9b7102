// Command openapi-schema prints the OpenAPI v2 definitions of our types, the
// input applyconfiguration-gen needs to make server-side-apply clients.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/kvstore-io/kvstore-apiserver/pkg/generated/openapi"
)

const (
	// modelPackage prefixes the model names of our types.
	modelPackage = "io.kvstore."
	// goPackage prefixes their Go paths.
	goPackage = "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "openapi-schema: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	ref := func(name string) spec.Ref { return spec.MustCreateRef("#/definitions/" + name) }
	defs := openapi.GetOpenAPIDefinitions(ref)
	schemas := make(map[string]spec.Schema, len(defs))
	for name, def := range defs {
		// A type may embed its v2 form; applyconfiguration-gen reads v2.
		if v2, ok := def.Schema.Extensions[common.ExtensionV2Schema].(spec.Schema); ok {
			schemas[name] = v2
			continue
		}
		schemas[name] = def.Schema
	}
	// applyconfiguration-gen looks our kinds up by their Go path, not by
	// the model names they are served under (+k8s:openapi-model-package):
	// without these aliases it finds no schema, and the generated Extract
	// helpers treat every list as atomic and return other managers' fields.
	for name := range defs {
		if rest, ok := strings.CutPrefix(name, modelPackage); ok {
			schemas[util.ToRESTFriendlyName(goPackage+rest)] = schemas[name]
		}
	}
	return json.NewEncoder(os.Stdout).Encode(&spec.Swagger{SwaggerProps: spec.SwaggerProps{
		Swagger:     "2.0",
		Info:        &spec.Info{InfoProps: spec.InfoProps{Title: "kvstore-apiserver", Version: "unversioned"}},
		Definitions: schemas,
	}})
}
