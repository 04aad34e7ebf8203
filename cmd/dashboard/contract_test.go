package main

import (
	"net/http"
	"os"
	"sync"

	"github.com/toolq/toolq/internal/openapitest"
)

// apiClient is the tests' HTTP client for the API: each answer of /api/v1 it gets must be one
// the OpenAPI document describes (internal/openapitest), or the request fails with the reason.
var apiClient = sync.OnceValue(func() *http.Client {
	doc, err := os.ReadFile("../../internal/server/openapi.json")
	if err != nil {
		panic(err)
	}
	c, err := openapitest.New(doc)
	if err != nil {
		panic(err)
	}
	return &http.Client{Transport: c.Transport(nil)}
})
