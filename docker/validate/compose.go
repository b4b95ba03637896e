package main

// Loading a Compose file with compose-go, strictly (see main.go), and the
// checks the loader does not do: files the project needs, pinned images.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/sirupsen/logrus"
)

// warnings collects what the loader logs at warning level or above.
type warnings struct{ msgs []string }

func (w *warnings) Levels() []logrus.Level {
	return []logrus.Level{logrus.PanicLevel, logrus.FatalLevel,
		logrus.ErrorLevel, logrus.WarnLevel}
}

func (w *warnings) Fire(e *logrus.Entry) error {
	w.msgs = append(w.msgs, e.Message)
	return nil
}

// load: the project of @file with every profile enabled, interpolated
// from @env only; a loader warning is an error.
func load(file string, env []string) (*types.Project, error) {
	w := &warnings{}
	logrus.SetOutput(io.Discard) // reported once, as errors, below
	logrus.AddHook(w)
	opts, err := cli.NewProjectOptions([]string{file},
		cli.WithEnv(env),
		cli.WithInterpolation(true),
		cli.WithNormalization(true),
		cli.WithConsistency(true),
		cli.WithResolvedPaths(true),
		cli.WithProfiles([]string{"*"}))
	if err != nil {
		return nil, err
	}
	project, err := opts.LoadProject(context.Background())
	if err != nil {
		return nil, err
	}
	if len(w.msgs) > 0 {
		return nil, errors.New(strings.Join(w.msgs, "; "))
	}
	return project, nil
}

func exists(path, what string) error {
	_, err := os.Stat(path)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the path is named once, below
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, path, err)
	}
	return nil
}

// dockerfileOf: the Dockerfile path of a service's build, "" if inline.
func dockerfileOf(b *types.BuildConfig) string {
	if b.DockerfileInline != "" {
		return ""
	}
	df := b.Dockerfile
	if df == "" {
		df = "Dockerfile"
	}
	if !filepath.IsAbs(df) {
		df = filepath.Join(b.Context, df)
	}
	return df
}

// checkFiles: the build context, Dockerfile and bind mount sources exist.
func checkFiles(name string, s types.ServiceConfig) []error {
	var errs []error
	if b := s.Build; b != nil {
		if err := exists(b.Context, "build context"); err != nil {
			errs = append(errs, err)
		} else if df := dockerfileOf(b); df != "" {
			if err := exists(df, "dockerfile"); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, v := range s.Volumes {
		if v.Type == types.VolumeTypeBind {
			if err := exists(v.Source, "bind mount source"); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for i := range errs {
		errs[i] = fmt.Errorf("service %s: %w", name, errs[i])
	}
	return errs
}

// checkPinned: an image pulled from a registry names a release tag or a
// digest; an image the project builds may be named anything.
func checkPinned(name string, s types.ServiceConfig) error {
	if s.Build != nil || pinned(s.Image) {
		return nil
	}
	return fmt.Errorf("service %s: image %q is not pinned: name a release "+
		"tag or a digest, not latest", name, s.Image)
}
