// Command openapigen completes the OpenAPI document protoc-gen-openapiv2
// made with what only the gateway knows (gateway.OpenAPIDocument): `make
// proto` runs it as
//
//	go run ./gateway/openapigen GENERATED.swagger.json gateway/openapi.json
package main

import (
	"fmt"
	"os"

	"github.com/seatledger/seatledger/gateway"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: openapigen GENERATED.swagger.json OUT.json")
		os.Exit(2)
	}
	in, err := os.ReadFile(os.Args[1])
	if err == nil {
		var out []byte
		if out, err = gateway.OpenAPIDocument(in); err == nil {
			err = os.WriteFile(os.Args[2], out, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "openapigen:", err)
		os.Exit(1)
	}
}
