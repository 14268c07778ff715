package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/flotilla-dev/flotilla/internal/ocipkg"
)

// Environment variables publish reads credentials from when no flag gives them.
const (
	envOCIUsername = "FLOTILLA_OCI_USERNAME"
	envOCIPassword = "FLOTILLA_OCI_PASSWORD"
)

func publishCmd() *cobra.Command {
	var ref, username string
	var insecure, passwordStdin bool
	cmd := &cobra.Command{
		Use:   "publish DIR --oci REGISTRY/REPO/PKG:vN",
		Short: "Publish a kpt package directory as an OCI artifact, one immutable revision tag",
		Long: `publish packs the kpt package in DIR (its regular files, without .git; symlinks are refused)
into an OCI artifact, one tar+gzip layer, and pushes it as REGISTRY/REPO/PKG:vN, where Config Sync
(sourceType: oci), Flux (OCIRepository) and Argo CD (OCI sources) can sync it and flotilla can
resolve it. It prints the digest, REGISTRY/REPO/PKG@sha256:..., which the same files always give.
Revisions are immutable: a tag that names other content is refused; publish the next vN instead.
Publishing the same files to the same tag again changes nothing.
Credentials: --username with --password-stdin, or FLOTILLA_OCI_USERNAME and FLOTILLA_OCI_PASSWORD.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := ociCredentials(cmd.InOrStdin(), username, passwordStdin)
			if err != nil {
				return err
			}
			opts.Insecure = insecure
			dir := args[0]
			files, err := ocipkg.ReadDir(dir)
			if err != nil {
				return err
			}
			if _, ok := files["Kptfile"]; !ok {
				return fmt.Errorf("%s has no Kptfile: publish takes a kpt package directory (kpt pkg init creates one)", filepath.Clean(dir))
			}
			a, err := ocipkg.Push(cmd.Context(), ref, files, opts)
			if err != nil {
				return err
			}
			if a.AlreadyPublished {
				fmt.Fprintf(cmd.ErrOrStderr(), "%s:%s already holds these files: nothing pushed\n", a.Image, a.Tag)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s@%s\n", a.Image, a.Digest)
			return nil
		},
	}
	cmd.Flags().StringVar(&ref, "oci", "", "the revision to publish, REGISTRY/REPO/PKG:vN (no scheme)")
	cmd.Flags().BoolVar(&insecure, "insecure", false, "allow plain http to the registry")
	cmd.Flags().StringVar(&username, "username", "", "registry username (default $"+envOCIUsername+")")
	cmd.Flags().BoolVar(&passwordStdin, "password-stdin", false, "read the registry password or token from standard input (default $"+envOCIPassword+")")
	_ = cmd.MarkFlagRequired("oci")
	return cmd
}

// ociCredentials takes the username and password from the flags, else from the environment.
// Both or neither: a registry takes no username without a password, and the reverse is a
// mistake more often than a token registry.
func ociCredentials(stdin io.Reader, username string, passwordStdin bool) (ocipkg.Options, error) {
	if username == "" {
		username = os.Getenv(envOCIUsername)
	}
	password := os.Getenv(envOCIPassword)
	if passwordStdin {
		b, err := io.ReadAll(io.LimitReader(stdin, 64<<10))
		if err != nil {
			return ocipkg.Options{}, fmt.Errorf("read the password from standard input: %w", err)
		}
		password = strings.TrimRight(string(b), "\r\n")
		if password == "" {
			return ocipkg.Options{}, errors.New("--password-stdin: standard input is empty")
		}
	}
	switch {
	case username != "" && password == "":
		return ocipkg.Options{}, fmt.Errorf("a username without a password: add --password-stdin or set %s", envOCIPassword)
	case username == "" && password != "":
		return ocipkg.Options{}, fmt.Errorf("a password without a username: add --username or set %s", envOCIUsername)
	}
	return ocipkg.Options{Username: username, Password: password}, nil
}
