package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/edgeway/edgeway/admin"
	"github.com/edgeway/edgeway/conf"
	edgetls "github.com/edgeway/edgeway/tls"
)

// preflight checks, without binding or serving anything, what run opens or
// checks at start beyond the configuration's text: certificate and key
// files (parsed, and matched), client CAs, the ACME CA root and storage,
// the admin token file (present, private, not empty), state_dir and the
// log files (writable). Each error points at the directive that names
// the path. run and validate both call it, so validate passes exactly
// what run starts with.
func preflight(cfg *conf.Config) []conf.Diagnostic {
	var diags []conf.Diagnostic
	diags = append(diags, preflightTLS(cfg)...)
	if a := cfg.Admin; a != nil && a.TokenFile != "" {
		ref := pathRef(cfg, "token_file", a.TokenFile, a.Pos)
		_, err := os.Stat(a.TokenFile)
		switch {
		case a.CreateToken && errors.Is(err, os.ErrNotExist):
			if err := creatable(filepath.Dir(a.TokenFile)); err != nil {
				diags = append(diags, ref.Errorf("%s cannot be created: %v", a.TokenFile, err))
			}
		default:
			if _, err := admin.ReadTokenFile(a.TokenFile); err != nil {
				diags = append(diags, ref.Errorf("%v", err))
			}
		}
	}
	for _, p := range cfg.Paths {
		var err error
		switch p.Use {
		case conf.WritableDir:
			err = creatable(p.Path)
		case conf.AppendFile:
			err = appendable(p.Path)
		default:
			continue // read files are checked by the code that reads them, above
		}
		if err != nil {
			diags = append(diags, p.Errorf("%s: %v", p.Path, err))
		}
	}
	if a := acmeBlock(cfg); a != nil {
		if _, ok := cfg.PathOf("storage", a.Storage); !ok { // the default folder
			if err := creatable(a.Storage); err != nil {
				diags = append(diags, conf.Diagnostic{Pos: a.Pos, Msg: fmt.Sprintf("acme storage %s (the default; set storage DIR): %v", a.Storage, err)})
			}
		}
		if _, err := acmeHTTPClient(a.CARoot); err != nil {
			diags = append(diags, pathRef(cfg, "ca_root", a.CARoot, a.Pos).Errorf("%v", err))
		}
	}
	return diags
}

// preflightTLS loads the certificates and builds each TLS listener's
// configuration as start does, in a store that is thrown away.
func preflightTLS(cfg *conf.Config) []conf.Diagnostic {
	store := edgetls.NewStore(discard)
	defer store.Close()
	at := func(err error, pos conf.Pos) conf.Diagnostic {
		var fe *edgetls.FileError
		if errors.As(err, &fe) {
			directive := fe.Kind
			if directive == "key" {
				directive = "cert"
			}
			return pathRef(cfg, directive, fe.File, pos).Errorf("%v", err)
		}
		return conf.Diagnostic{Pos: pos, Msg: err.Error()}
	}
	if err := store.Load(cfg.TLS); err != nil {
		return []conf.Diagnostic{at(err, cfg.TLS.Pos)}
	}
	var diags []conf.Diagnostic
	for _, l := range cfg.Listeners {
		if l.TLS == nil {
			continue
		}
		s := store
		if l.TLS.Certificates != nil {
			s = edgetls.NewStore(discard)
			defer s.Close()
			if err := s.Load(l.TLS.Certificates); err != nil {
				diags = append(diags, at(err, l.TLS.Pos))
				continue
			}
		}
		if _, err := s.ServerConfig(l.TLS, nil); err != nil {
			diags = append(diags, at(err, l.Pos))
		}
	}
	return diags
}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

func acmeBlock(cfg *conf.Config) *conf.ACME {
	if cfg.TLS == nil {
		return nil
	}
	return cfg.TLS.ACME
}

// pathRef is the PathRef of path as directive names it, or one at the
// enclosing block's position.
func pathRef(cfg *conf.Config, directive, path string, block conf.Pos) conf.PathRef {
	if p, ok := cfg.PathOf(directive, path); ok {
		return p
	}
	return conf.PathRef{Directive: directive, Path: path, Pos: block}
}

// creatable reports why dir cannot be used as a folder edgeway writes in:
// it is not a folder or not writable, or it is missing and its nearest
// existing parent is not writable (start creates it).
func creatable(dir string) error {
	for d := dir; ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err == nil {
			if !st.IsDir() {
				return fmt.Errorf("%s is not a folder", d)
			}
			if err := unix.Access(d, unix.W_OK|unix.X_OK); err != nil {
				return fmt.Errorf("%s is not writable: %w", d, err)
			}
			return nil
		}
		if !errors.Is(err, os.ErrNotExist) || filepath.Dir(d) == d {
			return err
		}
	}
}

// appendable reports why the log file path cannot be opened for
// appending: its folder is missing, or the file or folder is not
// writable.
func appendable(path string) error {
	st, err := os.Stat(path)
	switch {
	case err == nil && st.IsDir():
		return errors.New("is a folder")
	case err == nil:
		if err := unix.Access(path, unix.W_OK); err != nil {
			return fmt.Errorf("not writable: %w", err)
		}
		return nil
	case !errors.Is(err, os.ErrNotExist):
		return err
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("its folder %s does not exist", dir)
	}
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return fmt.Errorf("its folder %s is not writable: %w", dir, err)
	}
	return nil
}
