"""Server plumbing around the app: admission, the request deadline, the listen address, the banner."""
