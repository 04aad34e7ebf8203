package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// envPrefix starts the environment variable of every flag: --sim-listen reads TOOLQ_SIM_LISTEN.
const envPrefix = "TOOLQ_"

// lookupEnvFunc reads one environment variable; os.LookupEnv in production, a map in tests.
type lookupEnvFunc func(string) (string, bool)

// envFlags is a flag.FlagSet whose every flag can also be given by an environment variable.
// A flag on the command line wins over its variable, which wins over the default. A variable
// that is set but empty counts as set: TOOLQ_SIM_LISTEN= turns the listener off as
// --sim-listen ” does.
type envFlags struct {
	fs *flag.FlagSet
	// lists are the repeatable flags, whose variables hold comma-separated values.
	lists map[string]bool
}

// newEnvFlags returns the flags of subcommand name. Its help prints synopsis, then about, then
// each flag with its variable.
func newEnvFlags(name, synopsis, about string, output io.Writer) *envFlags {
	f := &envFlags{fs: flag.NewFlagSet(name, flag.ContinueOnError), lists: map[string]bool{}}
	f.fs.SetOutput(output)
	f.fs.Usage = func() {
		w := f.fs.Output()
		fmt.Fprintf(w, "Usage: dashboard %s\n\n%s\n", synopsis, about)
		if !f.hasFlags() {
			return
		}
		fmt.Fprintf(w, "\nFlags (each can also be set by the environment variable shown; the command line wins):\n")
		f.fs.VisitAll(func(fl *flag.Flag) { f.printFlag(w, fl) })
	}
	return f
}

// envName is the environment variable of flag name.
func envName(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

func (f *envFlags) hasFlags() bool {
	n := 0
	f.fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

func (f *envFlags) printFlag(w io.Writer, fl *flag.Flag) {
	placeholder, usage := flag.UnquoteUsage(fl)
	if placeholder != "" {
		placeholder = " " + strings.ToUpper(placeholder)
	}
	if f.lists[fl.Name] {
		placeholder += ",..."
	}
	fmt.Fprintf(w, "  --%s%s\n      %s\n      env %s", fl.Name, placeholder, usage, envName(fl.Name))
	if fl.DefValue != "" && fl.DefValue != "false" {
		fmt.Fprintf(w, ", default %s", fl.DefValue)
	}
	fmt.Fprintln(w)
}

// String defines a string flag. A word in backquotes in usage names its value in the help.
func (f *envFlags) String(p *string, name, value, usage string) {
	f.fs.StringVar(p, name, value, usage)
}

// Bool defines a boolean flag; its variable takes what strconv.ParseBool takes.
func (f *envFlags) Bool(p *bool, name string, value bool, usage string) {
	f.fs.BoolVar(p, name, value, usage)
}

// Int64 defines an integer flag.
func (f *envFlags) Int64(p *int64, name string, value int64, usage string) {
	f.fs.Int64Var(p, name, value, usage)
}

// Float64 defines a number flag.
func (f *envFlags) Float64(p *float64, name string, value float64, usage string) {
	f.fs.Float64Var(p, name, value, usage)
}

// Duration defines a duration flag (time.ParseDuration syntax: 500ms, 10s, 2m).
func (f *envFlags) Duration(p *time.Duration, name string, value time.Duration, usage string) {
	f.fs.DurationVar(p, name, value, usage)
}

// List defines a repeatable flag: --region a --region b, or --region a,b, or TOOLQ_REGION=a,b.
// The first value given replaces the default rather than adding to it.
func (f *envFlags) List(p *[]string, name string, value []string, usage string) {
	*p = value
	f.lists[name] = true
	f.fs.Var(&listValue{p: p}, name, usage)
}

// Parse parses args, then fills every flag not given on the command line from its
// environment variable, if set. It rejects positional arguments: no subcommand takes any.
func (f *envFlags) Parse(args []string, lookupEnv lookupEnvFunc) error {
	if err := f.fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		// The flag package has printed the mistake and the usage.
		return &usageError{err: err, reported: true}
	}
	if f.fs.NArg() > 0 {
		err := fmt.Errorf("unexpected argument %q", f.fs.Arg(0))
		fmt.Fprintf(f.fs.Output(), "%v\n", err)
		f.fs.Usage()
		return &usageError{err: err, reported: true}
	}
	given := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	var err error
	f.fs.VisitAll(func(fl *flag.Flag) {
		if given[fl.Name] || err != nil {
			return
		}
		v, ok := lookupEnv(envName(fl.Name))
		if !ok {
			return
		}
		if setErr := f.setFromEnv(fl, v); setErr != nil {
			err = &usageError{err: fmt.Errorf("%s=%q: %w", envName(fl.Name), v, setErr)}
		}
	})
	return err
}

func (f *envFlags) setFromEnv(fl *flag.Flag, v string) error {
	if !f.lists[fl.Name] {
		return fl.Value.Set(v)
	}
	// An empty variable sets an empty list.
	lv := fl.Value.(*listValue)
	*lv.p = []string{}
	lv.set = true
	return lv.Set(v)
}

// listValue is the flag.Value of a repeatable flag; each Set may carry several
// comma-separated values.
type listValue struct {
	p   *[]string
	set bool
}

func (l *listValue) String() string {
	if l == nil || l.p == nil {
		return ""
	}
	return strings.Join(*l.p, ",")
}

func (l *listValue) Set(s string) error {
	if !l.set {
		*l.p = nil
		l.set = true
	}
	for v := range strings.SplitSeq(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*l.p = append(*l.p, v)
		}
	}
	return nil
}
