// Command validate checks a Compose file and the Dockerfiles it builds
// with the libraries Docker itself uses: compose-go (Docker Compose v2's
// loader of the Compose specification) and BuildKit's Dockerfile parser
// and linter. No Docker engine is needed. It fails on anything that
// `docker compose up` would refuse or would quietly get wrong:
//
//   - the Compose specification's schema: unknown keys, wrong types;
//   - references: depends_on, networks, volumes, configs and secrets that
//     name nothing the file defines (every profile enabled);
//   - interpolation: bad ${...} syntax, ${VAR:?msg} without VAR, and a
//     variable that is unset and has no default (the loader only warns
//     and substitutes "": here every loader warning is an error);
//   - files: each build context and its Dockerfile, each bind-mounted
//     host path;
//   - image tags: an image pulled from a registry names a release tag or
//     a digest, not latest (an image a service builds may be named
//     anything); the same for each Dockerfile's FROM;
//   - each Dockerfile: syntax, BuildKit's lint rules, COPY/ADD sources
//     present in the build context and not excluded by its .dockerignore.
//
// The interpolation environment is empty apart from -e NAME=VALUE, so the
// file is checked with its own defaults whatever the caller's environment
// holds. On success it prints the project's services, one line each.
//
//	validate [-e NAME=VALUE]... [-json] COMPOSE-FILE
//	validate -context-files SERVICE COMPOSE-FILE
//
// -json prints the checked project (interpolated, normalized: what
// `docker compose config --format json` prints) instead of the summary.
// -context-files lists the files of SERVICE's build context as BuildKit
// would send them (.dockerignore applied), relative to the context.
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"
)

type envFlags []string

func (e *envFlags) String() string { return strings.Join(*e, ",") }

func (e *envFlags) Set(v string) error {
	if !strings.Contains(v, "=") {
		return fmt.Errorf("%q: expected NAME=VALUE", v)
	}
	*e = append(*e, v)
	return nil
}

// check: every problem of @project, its Dockerfiles once each.
func check(project *types.Project, names []string) []error {
	var errs []error
	linted := map[string]bool{}
	for _, n := range names {
		s := project.Services[n]
		files := checkFiles(n, s)
		errs = append(errs, files...)
		if err := checkPinned(n, s); err != nil {
			errs = append(errs, err)
		}
		if s.Build == nil || len(files) > 0 {
			continue
		}
		df := dockerfileOf(s.Build)
		if df != "" && !linted[s.Build.Context+"\x00"+df] {
			linted[s.Build.Context+"\x00"+df] = true
			errs = append(errs, checkDockerfile(s.Build.Context, df)...)
		}
	}
	return errs
}

func describe(name string, s types.ServiceConfig) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-13s %s", name, s.Image)
	if s.Build != nil {
		fmt.Fprintf(&b, " (built)")
	}
	if len(s.Profiles) > 0 {
		fmt.Fprintf(&b, ", profiles %s", strings.Join(s.Profiles, ","))
	}
	if len(s.DependsOn) > 0 {
		deps := make([]string, 0, len(s.DependsOn))
		for d := range s.DependsOn {
			deps = append(deps, d)
		}
		sort.Strings(deps)
		fmt.Fprintf(&b, ", after %s", strings.Join(deps, ","))
	}
	if args := append(append([]string{}, s.Entrypoint...), s.Command...); len(args) > 0 {
		fmt.Fprintf(&b, ": %q", args)
	}
	return b.String()
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

func main() {
	var env envFlags
	var listService string
	var asJSON bool
	flag.Var(&env, "e", "NAME=VALUE in the interpolation environment (repeatable)")
	flag.StringVar(&listService, "context-files", "",
		"list the build context files of this service instead")
	flag.BoolVar(&asJSON, "json", false, "print the checked project as JSON")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(),
			"Usage: validate [-e NAME=VALUE]... [-json | -context-files SERVICE] COMPOSE-FILE\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	file := flag.Arg(0)
	project, err := load(file, env)
	if err != nil {
		fail("%s: %v", file, err)
	}
	if listService != "" {
		s, ok := project.Services[listService]
		if !ok || s.Build == nil {
			fail("%s: no service %q with a build", file, listService)
		}
		files, err := contextFiles(s.Build.Context, dockerfileOf(s.Build))
		if err != nil {
			fail("%s: %v", file, err)
		}
		fmt.Println(strings.Join(files, "\n"))
		return
	}
	names := project.ServiceNames()
	sort.Strings(names)
	if errs := check(project, names); len(errs) > 0 {
		for _, e := range errs {
			fmt.Fprintf(os.Stderr, "%s: %v\n", file, e)
		}
		os.Exit(1)
	}
	if asJSON {
		b, err := project.MarshalJSON()
		if err != nil {
			fail("%s: %v", file, err)
		}
		fmt.Println(string(b))
		return
	}
	fmt.Printf("%s: project %s, %d services, Dockerfiles checked\n", file, project.Name, len(names))
	for _, n := range names {
		fmt.Println("  " + describe(n, project.Services[n]))
	}
}
