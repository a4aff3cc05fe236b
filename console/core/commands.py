"""Which commands are what, when an output says one is missing: the agent and what anything at
all needs to run (agent_missing), a project's own tools (environment), words no shell command
is (a script read by the wrong interpreter), and the builtins only bash has (a bash script run
by sh). ``classify.missing_command`` reads them."""

from __future__ import annotations

KNOWN_AGENTS = ("claude", "codex", "kimi", "aider", "gemini", "cursor-agent", "opencode", "goose", "qwen", "copilot",
                "continue", "cline", "amp", "crush")
# The agent, and what anything at all needs to run: interpreters and runtimes, their package
# managers and build tools, git, shells, the cloud CLIs a step drives. Missing, they are
# agent_missing (git without its remote helpers is a broken git install: environment).
REQUIRED = frozenset({
    "node", "nodejs", "python", "python2", "python3", "py", "pip", "pip3", "java", "javac", "ruby", "perl", "php",
    "go", "cargo", "rustc", "rustup", "dotnet", "deno", "bun", "npm", "npx", "yarn", "pnpm", "corepack", "git",
    "git-lfs", "ssh", "scp", "sftp", "rsync", "curl", "wget", "bash", "sh", "zsh", "fish", "pwsh", "powershell",
    "conda", "mamba", "uv", "poetry", "pipx", "gem", "bundle", "composer", "mvn", "gradle", "swift", "dart", "flutter",
    "r", "rscript", "erl", "erlc", "elixir", "mix", "iex", "escript", "rebar3", "ghc",
    "ghci", "runhaskell", "cabal", "stack", "sbt", "scala", "kotlin", "kotlinc", "lua", "luajit", "julia", "ocaml",
    "opam", "dune", "clojure", "lein", "zig", "nim", "crystal", "groovy", "uvx", "pwsh.exe", "cmd", "tclsh", "gawk",
    "awk", "sed", "matlab", "octave", "az", "azure", "gcloud", "aws", "scoop", "choco", "winget", "kubectl", "helm",
    "terraform", "tofu", "docker", "podman", "gh", "glab", "lfs", "sdkmanager", "platformio", "pio", *KNOWN_AGENTS,
})
# A project's own tools and the utilities its steps use (installed with its dependencies, in
# node_modules/.bin or a venv, or on the build host): missing, the setup is not complete: environment.
PROJECT_TOOLS = frozenset({
    "jest", "mocha", "vitest", "tsc", "webpack", "vite", "eslint", "prettier", "nodemon", "gulp", "grunt", "ng",
    "next", "nuxt", "react-scripts", "vue-cli-service", "rimraf", "cross-env", "concurrently", "ts-node", "babel",
    "lerna", "husky", "electron", "electron-builder", "playwright", "cypress", "karma", "jasmine", "nx", "turbo",
    "tailwindcss", "postcss", "sass", "pytest", "tox", "nox", "flake8", "black", "mypy", "ruff", "pylint", "isort",
    "sphinx-build", "pyinstaller", "gunicorn", "uvicorn", "celery", "django-admin", "rails", "rake", "rspec",
    "rubocop", "phpunit", "artisan", "pod", "fastlane", "node-gyp", "uni", "hexo", "gatsby", "expo", "storybook",
    "jq", "yq", "make", "cmake", "ninja", "meson", "gcc", "g++", "cc", "clang", "ld", "pkg-config", "autoreconf",
    "docker-compose", "pulumi", "ansible",
    "heroku", "vercel", "netlify", "firebase", "wrangler", "brew", "apt", "apt-get", "nix",
    "sudo", "systemctl", "unzip", "tar", "zip", "openssl", "gpg", "xcodebuild", "xcrun", "adb",
    "protoc", "buf", "wasm-pack", "cargo-watch", "sqlite3", "psql", "mysql", "redis-cli", "mongosh", "ffmpeg",
})
GENERIC = frozenset({"error", "fatal", "warning", "warn", "info", "module", "file", "package", "image", "manifest",
                     "tag", "repository", "remote", "path", "key", "page", "resource", "object", "not", "ref",
                     "branch", "revision", "the", "a", "it", "target", "version", "host", "command"})
# Words that are no command at all: a script read by the wrong interpreter, or a CRLF line end
# (also a "#!" line's interpreter ending in "^M").
NOT_COMMANDS = frozenset({"class", "def", "import", "from", "function", "return", "if", "else", "fi", "then", "do",
                          "done", "$'\\r'", "'\\r'", "\\r", "{", "}", "(", ")", "end", "print", "var", "const", "let"})
# bash's own builtins and keywords: "not found" from sh or dash means a bash script ran under sh
BASH_ONLY = frozenset({"[[", "source", "declare", "shopt", "pushd", "popd", "typeset", "complete", "mapfile", "readarray"})
