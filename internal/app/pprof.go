package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/toolq/toolq/internal/auth"
)

// listenPprof serves net/http/pprof on its own listener, which must be loopback: profiles show
// what the process is doing, to whoever can reach them. Requests must name a loopback host too
// (a page whose name was re-bound to 127.0.0.1 could read them otherwise), and the command line,
// which may carry --session-key, is not served. It returns a function that stops the listener.
func listenPprof(addr string, log interface{ Info(string, ...any) }) (func(context.Context) error, error) {
	if !auth.LoopbackListen(addr) {
		return nil, fmt.Errorf("app: --pprof %q: profiles are served on a loopback address only", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("app: --pprof: %w", err)
	}
	srv := &http.Server{Handler: pprofHandler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	log.Info("profiling listening", "url", "http://"+ln.Addr().String()+"/debug/pprof/")
	return func(ctx context.Context) error {
		if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}, nil
}

// pprofHandler serves the profiles of net/http/pprof, but not the command line, to requests that
// name a loopback host.
func pprofHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/debug/pprof/cmdline" {
			http.NotFound(w, r)
			return
		}
		pprof.Index(w, r)
	})
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !auth.LoopbackRequestHost(r.Host) {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		mux.ServeHTTP(w, r)
	})
}
