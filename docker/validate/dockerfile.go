package main

// Checks of a Dockerfile against its build context, with BuildKit's own
// parser and linter (what `docker build` runs before building): syntax,
// the lint rules, base images pinned, and every COPY/ADD source present
// in the context and not excluded by its .dockerignore.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// ignoreFile: BuildKit reads <Dockerfile>.dockerignore next to the
// Dockerfile when it exists, else <context>/.dockerignore.
func ignoreFile(context, dockerfile string) string {
	if _, err := os.Stat(dockerfile + ".dockerignore"); err == nil {
		return dockerfile + ".dockerignore"
	}
	return filepath.Join(context, ".dockerignore")
}

func ignoreMatcher(context, dockerfile string) (*patternmatcher.PatternMatcher, error) {
	f, err := os.Open(ignoreFile(context, dockerfile))
	if errors.Is(err, fs.ErrNotExist) {
		return patternmatcher.New(nil)
	} else if err != nil {
		return nil, err
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	return patternmatcher.New(patterns)
}

// contextFiles lists the files of the build context as BuildKit sends
// them (relative paths, .dockerignore applied).
func contextFiles(context, dockerfile string) ([]string, error) {
	pm, err := ignoreMatcher(context, dockerfile)
	if err != nil {
		return nil, err
	}
	var files []string
	err = filepath.WalkDir(context, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(context, path)
		if rel == "." {
			return nil
		}
		skip, err := pm.MatchesOrParentMatches(rel)
		if err != nil {
			return err
		}
		if skip && d.IsDir() && !pm.Exclusions() {
			return filepath.SkipDir
		}
		if !skip && !d.IsDir() {
			files = append(files, rel)
		}
		return nil
	})
	return files, err
}

func isStage(name string, earlier []instructions.Stage) bool {
	if i, err := strconv.Atoi(name); err == nil {
		return i >= 0 && i < len(earlier)
	}
	for _, s := range earlier {
		if strings.EqualFold(s.Name, name) {
			return true
		}
	}
	return false
}

func pinned(image string) bool {
	if image == "scratch" || strings.Contains(image, "@sha256:") {
		return true
	}
	last := image[strings.LastIndex(image, "/")+1:]
	i := strings.LastIndex(last, ":")
	return i >= 0 && last[i+1:] != "latest"
}

// checkSources: each COPY/ADD source from the context exists there and
// is not excluded by the .dockerignore.
func checkSources(context string, pm *patternmatcher.PatternMatcher, cmd string,
	line int, srcs []string) []error {
	var errs []error
	for _, src := range srcs {
		if strings.Contains(src, "$") || strings.Contains(src, "://") {
			continue
		}
		matches, _ := filepath.Glob(filepath.Join(context, src))
		if len(matches) == 0 {
			errs = append(errs, fmt.Errorf("line %d: %s %s: not in the build context %s",
				line, cmd, src, context))
		}
		for _, m := range matches {
			rel, _ := filepath.Rel(context, m)
			if rel == "." {
				continue
			}
			if skip, _ := pm.MatchesOrParentMatches(rel); skip {
				errs = append(errs, fmt.Errorf("line %d: %s %s: excluded by the .dockerignore",
					line, cmd, rel))
			}
		}
	}
	return errs
}

func line(loc []parser.Range) int {
	if len(loc) == 0 {
		return 0
	}
	return loc[0].Start.Line
}

// checkDockerfile: every problem found in @dockerfile built from @context.
func checkDockerfile(context, dockerfile string) []error {
	f, err := os.Open(dockerfile)
	if err != nil {
		return []error{err}
	}
	defer f.Close()
	res, err := parser.Parse(f)
	if err != nil {
		return []error{err}
	}
	var errs []error
	for _, w := range res.Warnings {
		n := 0
		if w.Location != nil {
			n = w.Location.Start.Line
		}
		errs = append(errs, fmt.Errorf("line %d: %s", n, w.Short))
	}
	lint := linter.New(&linter.Config{Warn: func(rule, _, _, msg string, loc []parser.Range) {
		errs = append(errs, fmt.Errorf("line %d: %s: %s", line(loc), rule, msg))
	}})
	stages, _, err := instructions.Parse(res.AST, lint)
	if err != nil {
		return append(errs, err)
	}
	pm, err := ignoreMatcher(context, dockerfile)
	if err != nil {
		return append(errs, err)
	}
	for i, s := range stages {
		if !isStage(s.BaseName, stages[:i]) && !pinned(s.BaseName) {
			errs = append(errs, fmt.Errorf("line %d: FROM %s: not pinned: name a "+
				"release tag or a digest, not latest", line(s.Location), s.BaseName))
		}
		for _, c := range s.Commands {
			switch c := c.(type) {
			case *instructions.CopyCommand:
				if c.From == "" {
					errs = append(errs, checkSources(context, pm, "COPY", line(c.Location()), c.SourcePaths)...)
				} else if !isStage(c.From, stages[:i]) && !strings.ContainsAny(c.From, "/:") {
					errs = append(errs, fmt.Errorf("line %d: COPY --from=%s: no earlier stage of that name",
						line(c.Location()), c.From))
				}
			case *instructions.AddCommand:
				errs = append(errs, checkSources(context, pm, "ADD", line(c.Location()), c.SourcePaths)...)
			}
		}
	}
	for i := range errs {
		errs[i] = fmt.Errorf("%s: %w", dockerfile, errs[i])
	}
	return errs
}
