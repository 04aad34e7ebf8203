package server

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/toolq/toolq/internal/openapitest"
)

// contract is the OpenAPI document's checker, made once for the package's tests.
var contract = sync.OnceValues(func() (*openapitest.Checker, error) { return openapitest.New(openAPIDocument) })

// checkContract fails t when an answer of /api/v1 is not one the OpenAPI document describes.
// The harnesses call it on every answer they get, so that every test of the API is a test of
// the document too.
func checkContract(t testing.TB, req *http.Request, rec *httptest.ResponseRecorder) {
	t.Helper()
	c, err := contract()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Check(req, rec.Code, rec.Header(), rec.Body.Bytes()); err != nil {
		t.Error(err)
	}
}
