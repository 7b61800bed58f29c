package acme

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/edgeway/edgeway/internal/atomicfile"
)

// ErrNotExist is returned by Storage.Get for a key that has no value.
var ErrNotExist = errors.New("acme: storage: no such key")

// Storage keeps the ACME state: the account and the certificates with
// their keys. Keys are slash-separated paths of letters, digits, '.', '-'
// and '_'. Implementations must be safe for concurrent use; Dir is the
// local one, and a cluster store can replace it.
type Storage interface {
	// Get returns the value of key, or an error wrapping ErrNotExist.
	Get(ctx context.Context, key string) ([]byte, error)
	// Put stores value under key atomically: a Get sees the old value or
	// the new one, never a part.
	Put(ctx context.Context, key string, value []byte) error
	// List returns the keys under prefix (a folder path; "" for all),
	// sorted.
	List(ctx context.Context, prefix string) ([]string, error)
	// Delete removes key; deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// Lock takes an exclusive lock named key, shared by every user of the
	// store (other processes and instances too), waiting until ctx is
	// done. The lock may be lost before Unlock (a cluster store's lease
	// expires): Lost tells, and PutLocked refuses to write after it.
	Lock(ctx context.Context, key string) (Lock, error)
	// PutLocked is Put, done only while l is still held (a fenced
	// write): a holder that lost its lock cannot overwrite what its
	// successor wrote. The error then wraps ErrLockLost.
	PutLocked(ctx context.Context, l Lock, key string, value []byte) error
}

// ErrLockLost is returned by PutLocked when the lock is no longer held.
var ErrLockLost = errors.New("acme: storage: lock lost")

// Lock is a held storage lock.
type Lock interface {
	// Lost is closed when the lock is no longer held: after Unlock, or
	// when a cluster store's lease ends. Work done under the lock stops
	// then.
	Lost() <-chan struct{}
	// Unlock releases the lock; calling it again does nothing.
	Unlock()
}

// Watcher is implemented by a Storage shared by several instances
// (optional): Watch sends the keys under prefix that another instance
// changed, so that a certificate renewed elsewhere is served at once.
// After a gap in its feed (a reconnect), it sends every key under prefix.
// The channel is closed when ctx ends.
type Watcher interface {
	Watch(ctx context.Context, prefix string) (<-chan string, error)
}

// Ephemeral is implemented by a Storage that can expire a value by
// itself (optional): challenges are put with it, so that a record of a
// crashed instance does not outlive the order. Without it, the manager
// uses Put and deletes the record when the challenge is done.
type Ephemeral interface {
	PutEphemeral(ctx context.Context, key string, value []byte, ttl time.Duration) error
}

// Dir is a Storage in a local folder: folders are made 0700 and files
// 0600, each Put writes a temporary file, syncs it, renames it into place
// and syncs the folder. Locks are flock(2) locks on files under
// ".locks", so they hold across processes sharing the folder.
type Dir struct {
	root string
	// lockPoll is how often Lock tries again while another holder has
	// the lock.
	lockPoll time.Duration
}

// Interface guard.
var _ Storage = (*Dir)(nil)

// NewDir returns the storage in folder root, creating it 0700 (and
// tightening an existing folder to 0700).
func NewDir(root string) (*Dir, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("acme: storage: %w", err)
	}
	if err := os.Chmod(root, 0o700); err != nil {
		return nil, fmt.Errorf("acme: storage: %w", err)
	}
	return &Dir{root: root, lockPoll: 100 * time.Millisecond}, nil
}

func (d *Dir) path(key string) (string, error) {
	if key == "" || strings.HasPrefix(key, "/") || slices.Contains(strings.Split(key, "/"), "..") ||
		strings.ContainsAny(key, "\\\x00") {
		return "", fmt.Errorf("acme: storage: invalid key %q", key)
	}
	return filepath.Join(d.root, filepath.FromSlash(key)), nil
}

// Get implements Storage.
func (d *Dir) Get(_ context.Context, key string) ([]byte, error) {
	p, err := d.path(key)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotExist, key)
	}
	if err != nil {
		return nil, fmt.Errorf("acme: storage: %w", err)
	}
	return b, nil
}

// Put implements Storage.
func (d *Dir) Put(_ context.Context, key string, value []byte) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(p, value); err != nil {
		return fmt.Errorf("acme: storage: put %s: %w", key, err)
	}
	return nil
}

// List implements Storage. Temporary files and locks are not listed.
func (d *Dir) List(_ context.Context, prefix string) ([]string, error) {
	var keys []string
	start := d.root
	if prefix != "" {
		p, err := d.path(prefix)
		if err != nil {
			return nil, err
		}
		start = p
	}
	err := filepath.WalkDir(start, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if e.IsDir() && e.Name() == ".locks" {
			return filepath.SkipDir
		}
		if e.IsDir() || strings.HasPrefix(e.Name(), ".tmp-") {
			return nil
		}
		rel, err := filepath.Rel(d.root, p)
		if err != nil {
			return err
		}
		keys = append(keys, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("acme: storage: list %s: %w", prefix, err)
	}
	slices.Sort(keys)
	return keys, nil
}

// Delete implements Storage.
func (d *Dir) Delete(_ context.Context, key string) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("acme: storage: delete %s: %w", key, err)
	}
	return nil
}

// dirLock is a flock(2) lock: the kernel drops it only with its holder,
// so it is lost only by Unlock.
type dirLock struct {
	once sync.Once
	f    *os.File
	lost chan struct{}
}

func (l *dirLock) Lost() <-chan struct{} { return l.lost }

func (l *dirLock) Unlock() {
	l.once.Do(func() {
		syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
		l.f.Close()
		close(l.lost)
	})
}

// PutLocked implements Storage: a flock is held until Unlock, so the
// write is refused only after that.
func (d *Dir) PutLocked(ctx context.Context, l Lock, key string, value []byte) error {
	select {
	case <-l.Lost():
		return fmt.Errorf("put %s: %w", key, ErrLockLost)
	default:
	}
	return d.Put(ctx, key, value)
}

// Lock implements Storage with flock(2), trying every lockPoll until ctx
// is done. The lock file stays (removing it would race with a waiter).
func (d *Dir) Lock(ctx context.Context, key string) (Lock, error) {
	p, err := d.path(".locks/" + key)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return nil, fmt.Errorf("acme: storage: lock %s: %w", key, err)
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("acme: storage: lock %s: %w", key, err)
	}
	t := time.NewTicker(d.lockPoll)
	defer t.Stop()
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return &dirLock{f: f, lost: make(chan struct{})}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("acme: storage: lock %s: %w", key, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("acme: storage: lock %s: %w", key, ctx.Err())
		case <-t.C:
		}
	}
}
