package e2e_test

import (
	"net/http"
	"sync"

	"github.com/toolq/toolq/internal/openapitest"
)

// apiClient is the tests' HTTP client: each answer of /api/v1 it gets must be one the OpenAPI
// document describes (internal/openapitest), or the request fails with the reason.
var apiClient = sync.OnceValue(func() *http.Client { return openapitest.Client("../internal/server/openapi.json") })
