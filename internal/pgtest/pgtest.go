// Package pgtest starts a real PostgreSQL server for tests: Debian's binaries, a throwaway
// cluster in a temporary directory, one fresh database per test.
//
// A test binary starts at most one server, the first time a test asks for a database, and
// stops it when the binary ends: the package's TestMain calls Main. Where no server can be
// started (no PostgreSQL binaries), DB skips the test with the reason, except under CI=true,
// where it fails: CI installs PostgreSQL, and a skipped store suite there would hide a gap.
package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver, for creating databases
)

// Main runs the tests of a package that uses DB, then stops the server if one was started.
// Use it as the package's TestMain: func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }.
func Main(m *testing.M) int {
	code := m.Run()
	if s := started.Load(); s != nil {
		if err := s.stop(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: stopping PostgreSQL: %v\n", err)
		}
	}
	return code
}

// DB creates an empty database on the package's server and returns its URL
// (postgres://…); the database is dropped when the test ends.
func DB(tb testing.TB) string {
	tb.Helper()
	s, err := server()
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("PostgreSQL is needed under CI=true: %v", err)
		}
		tb.Skipf("no PostgreSQL server for this test: %v", err)
	}
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbSeq.Add(1))
	if err := s.exec("CREATE DATABASE " + name); err != nil {
		tb.Fatalf("pgtest: create database: %v", err)
	}
	tb.Cleanup(func() {
		// WITH (FORCE) ends connections a test left open (a replica killed on purpose).
		if err := s.exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
			tb.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	return s.url(name)
}

var (
	startOnce sync.Once
	startErr  error
	started   atomic.Pointer[cluster]
	dbSeq     atomic.Int64
)

func server() (*cluster, error) {
	startOnce.Do(func() {
		c, err := start()
		if err != nil {
			startErr = err
			return
		}
		started.Store(c)
	})
	return started.Load(), startErr
}

// cluster is one running PostgreSQL server.
type cluster struct {
	bin   string // directory of initdb, pg_ctl, postgres
	dir   string // the temporary directory: data/ and the log
	port  int
	admin *sql.DB // connected to the "postgres" database, for CREATE/DROP DATABASE
	runAs *user.User
}

func (c *cluster) url(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

func (c *cluster) exec(q string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.admin.ExecContext(ctx, q)
	return err
}

// start initialises a cluster in a new temporary directory and starts it on a free port of
// 127.0.0.1 with trust authentication (nothing but this machine can reach it).
func start() (*cluster, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "toolq-pg-")
	if err != nil {
		return nil, err
	}
	c := &cluster{bin: bin, dir: dir}
	// PostgreSQL refuses to run as root: as root, run it as the "postgres" user that Debian's
	// package creates, in a directory that user owns.
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root and there is no postgres user to run PostgreSQL as: %w", err)
		}
		c.runAs = u
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	c.port = port
	data := filepath.Join(dir, "data")
	if out, err := c.run("initdb", "-D", data, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	// fsync off and a small shared_buffers: a test cluster needs speed, not durability.
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -c port=%d -c unix_socket_directories=%s -c fsync=off "+
		"-c synchronous_commit=off -c full_page_writes=off -c shared_buffers=32MB -c max_connections=200", port, dir)
	if out, err := c.run("pg_ctl", "-D", data, "-l", filepath.Join(dir, "log"), "-o", opts, "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pg_ctl start: %v: %s %s", err, out, log)
	}
	c.admin, err = sql.Open("pgx", c.url("postgres"))
	if err == nil {
		err = c.admin.Ping()
	}
	if err != nil {
		c.stop()
		return nil, fmt.Errorf("connect: %w", err)
	}
	return c, nil
}

// stop shuts the server down (fast: it ends open connections) and removes its directory.
func (c *cluster) stop() error {
	if c.admin != nil {
		c.admin.Close()
	}
	_, err := c.run("pg_ctl", "-D", filepath.Join(c.dir, "data"), "-m", "fast", "-w", "stop")
	return errors.Join(err, os.RemoveAll(c.dir))
}

// run runs one of the PostgreSQL programs, as the postgres user when we are root.
func (c *cluster) run(prog string, args ...string) ([]byte, error) {
	path := filepath.Join(c.bin, prog)
	var cmd *exec.Cmd
	if c.runAs != nil {
		cmd = exec.Command("runuser", append([]string{"-u", c.runAs.Username, "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	cmd.Dir = c.dir
	return cmd.CombinedOutput()
}

// binDir finds the newest installed PostgreSQL's programs: $PG_BIN, else Debian's
// /usr/lib/postgresql/<version>/bin, else initdb on the PATH.
func binDir() (string, error) {
	if d := os.Getenv("PG_BIN"); d != "" {
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb, no initdb on PATH; Debian: apt-get install postgresql)")
}

func versionOf(binDir string) int {
	v, _ := strconv.Atoi(strings.Split(filepath.Base(filepath.Dir(binDir)), ".")[0])
	return v
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Outage takes the database of url (one DB made) down for its clients, as a PostgreSQL that
// stopped would be: its open connections are ended and new ones refused, until restore is
// called (or the test ends). The server goes on serving the other tests' databases.
func Outage(tb testing.TB, url string) (restore func()) {
	tb.Helper()
	s := started.Load()
	if s == nil {
		tb.Fatal("pgtest: Outage of a database that DB did not make")
	}
	name := url[strings.LastIndex(url, "/")+1:]
	name, _, _ = strings.Cut(name, "?")
	if err := s.exec("ALTER DATABASE " + name + " ALLOW_CONNECTIONS false"); err != nil {
		tb.Fatalf("pgtest: refuse connections to %s: %v", name, err)
	}
	if err := s.exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + name + "' AND pid <> pg_backend_pid()"); err != nil {
		tb.Fatalf("pgtest: end the connections to %s: %v", name, err)
	}
	var once sync.Once
	restore = func() {
		once.Do(func() {
			if err := s.exec("ALTER DATABASE " + name + " ALLOW_CONNECTIONS true"); err != nil {
				tb.Errorf("pgtest: accept connections to %s again: %v", name, err)
			}
		})
	}
	tb.Cleanup(restore)
	return restore
}
