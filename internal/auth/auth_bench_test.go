package auth_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/toolq/toolq/internal/auth"
	"github.com/toolq/toolq/internal/store"
)

// BenchmarkAuthenticateBearer measures one Bearer check: a SHA-256 and an indexed SQLite lookup.
func BenchmarkAuthenticateBearer(b *testing.B) {
	st, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "toolq.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	plain, err := auth.CreateToken(context.Background(), st, "bench", auth.RoleViewer)
	if err != nil {
		b.Fatal(err)
	}
	a, _ := auth.New(auth.Config{Mode: auth.ModeToken, Store: st})
	r := httptest.NewRequest(http.MethodGet, "/api/v1/queues", nil)
	r.Header.Set("Authorization", "Bearer "+plain)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Authenticate(r); err != nil {
			b.Fatal(err)
		}
	}
}
