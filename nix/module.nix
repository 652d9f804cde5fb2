# NixOS module: one supervised set of agent sessions per box user (spec 70 NX-4 … NX-7).
#
# For every user under services.agent-box.users it generates the seed registry, the limit file, the baked
# epilogue (./epilogue.nix) behind a stable /etc path, wrappers for agent-box-session and agent-box-webhook-spawn
# that carry the user's configuration, and two units (spec 75): agent-box-tmux-<name>.service owns the tmux server
# and so every session, and agent-box-<name>.service runs agent-box-supervisor as that user. An upgrade restarts
# only the supervisor, which ends no session.
{ config, lib, pkgs, ... }:

let
  inherit (lib)
    concatStrings concatStringsSep escapeShellArg filter literalExpression mapAttrsToList
    mkEnableOption mkIf mkOption nameValuePair optionalAttrs types unique;

  cfg = config.services.agent-box;

  # One attribute set from a list of name-value pairs per user.
  perUserAttrs = f: users: builtins.listToAttrs (lib.concatLists (mapAttrsToList f users));

  # ---- names (10-registry §5) -------------------------------------------------------------------------

  # RG-5.1: every name the programs join into a path or split on spaces uses this charset.
  isPlainName = name: builtins.match "[A-Za-z0-9_-]+" name != null;

  # RG-5.2: the creation rule that `agent-box-session add` applies; a seed name is created the same way.
  reservedSessionNames = [ "settings" "downloads" "webhook" "sessions" "token" "ws" "auth" ];

  # Why `name` fails the creation rule, or null when it passes.
  sessionNameProblem = name:
    if !(isPlainName name) then
      "it must be non-empty and use only the characters A-Z a-z 0-9 _ -"
    else if builtins.stringLength name > 150 then
      "it is ${toString (builtins.stringLength name)} bytes long; at most 150 are allowed"
    else if builtins.elem name reservedSessionNames then
      "it is reserved (${concatStringsSep " " reservedSessionNames})"
    else
      null;

  # Variables the module derives from an option (or from the account): an `environment` entry would silently
  # override the option, so it is refused with a pointer to the option instead. AGENT_BOX_HOST_LABEL and
  # LOCAL_WEBHOOK_STATE_DIR are not here: overriding the host name or the receiver's directory is legitimate.
  ownedVariables = {
    PATH = "the unit's path (tmux, coreutils, bash, the wrappers)";
    HOME = "users.users.<name>.home";
    TMUX_TMPDIR = "the runtime directory /run/agent-box-<name>";
    AGENT_BOX_SESSIONS_SEED = "sessions";
    AGENT_BOX_AGENT_BINS = "agents";
    AGENT_BOX_AGENTS = "agents, defaultAgent and sessions.*.agent";
    AGENT_BOX_DEFAULT_AGENT = "defaultAgent";
    AGENT_BOX_MARK_STOPPED = "the user's baked epilogue";
    AGENT_BOX_SESSION_LIMIT_FILE = "sessionLimit";
    AGENT_BOX_TMUX_BIN = "services.agent-box.tmuxPackage";
    AGENT_BOX_RESTART_NOTICE = "restartNotice";
    AGENT_BOX_ON_OUTCOME = "onOutcome";
    AGENT_BOX_QUEUE_MAX = "queue.maxRecords";
    AGENT_BOX_QUEUE_MAX_AGE = "queue.maxAgeSeconds";
    AGENT_BOX_WEBHOOK_REPO = "webhook.enable";
    AGENT_BOX_HOOK_SESSION_ARGS = "webhook.hookSessionArgs";
  };

  # Set by the module to the one value its two units need (spec 75 UP-3.1).
  fixedVariables = {
    AGENT_BOX_TMUX_SERVER = "\"external\" on the supervisor's unit: the tmux server has a unit of its own";
  };

  # Never set on a box (NX-7), so never through `environment` either.
  forbiddenVariables = {
    # Test and demo knobs: every program on a box must find the one server at its default address.
    AGENT_BOX_TMUX_SOCKET = "a test and demo knob";
    AGENT_BOX_TMUX_TMPDIR = "a test and demo knob";
    AGENT_BOX_TMUX_CONF = "a test and demo knob";
    # The epilogue is baked with the default path; every program must agree with it.
    AGENT_BOX_SESSIONS_FILE = "every program, the baked epilogue included, must use the default registry path";
    # Only a parent that holds the registry lock may pass it, to one child.
    AGENT_BOX_REGISTRY_LOCK_FD = "only a parent holding the registry lock passes it to one child";
  };

  # ---- per-user values --------------------------------------------------------------------------------

  # Everything the module derives for one user. Both units, the wrappers, the read-only spawnCommand option and
  # the assertions all read it, so they cannot disagree.
  perUser = name: u:
    let
      account = config.users.users.${name} or { };
      home = account.home or "/var/empty";
      stateDir = "${home}/.local/state/agent-box";
      sessionsFile = "${home}/.config/agent-box/sessions.json";
      limitFile = "/etc/agent-box/users/${name}/session-limit";
      tmuxBin = lib.getExe' cfg.tmuxPackage "tmux";

      # Keys of `agents`, the default harness and every seeded harness, first occurrence kept (NX-4).
      harnesses = unique (builtins.attrNames u.agents ++ [ u.defaultAgent ] ++ mapAttrsToList (_: s: s.agent) u.sessions);

      seedDocument = {
        version = 1;
        sessions = builtins.mapAttrs (_: s: {
          inherit (s)
            agent workingDirectory extraArgs initialPrompt resumePrompt skipPermissions remoteControl
            remoteControlName;
          # Written as `add` writes a new entry (10-registry RG-3.2): not launched yet, no id.
          boxSessionId = null;
          hasRun = false;
        }) u.sessions;
      };
      # builtins.toJSON writes keys sorted; the supervisor installs the seed byte for byte (RG-10.3).
      seed = pkgs.writeText "agent-box-seed-${name}.json" (builtins.toJSON seedDocument);

      epilogue = pkgs.callPackage ./epilogue.nix { user = name; inherit sessionsFile stateDir; };
      # UP-3.3: a pane outlives the system that started it, so its launch file names the epilogue by a path that
      # every switch points at the current build and no garbage collection removes. The baked paths are the same in
      # every build, so an old pane's end is recorded by the new binary correctly.
      epilogueLink = "agent-box/users/${name}/mark-stopped";

      # Read by agent-box-session and agent-box-webhook-spawn as well as by the supervisor (00-overview §6).
      sharedEnvironment = {
        AGENT_BOX_DEFAULT_AGENT = u.defaultAgent;
        AGENT_BOX_AGENTS = concatStringsSep " " harnesses;
        AGENT_BOX_SESSION_LIMIT_FILE = limitFile;
        AGENT_BOX_TMUX_BIN = tmuxBin;
      }
      # Issue 24 (docs/intake.md IN-9): the intake queue's bounds reach the supervisor and the wrappers alike,
      # since webhook-spawn enforces the count when it accepts a batch. null: the programs' defaults.
      // optionalAttrs (u.queue.maxRecords != null) { AGENT_BOX_QUEUE_MAX = toString u.queue.maxRecords; }
      // optionalAttrs (u.queue.maxAgeSeconds != null) { AGENT_BOX_QUEUE_MAX_AGE = toString u.queue.maxAgeSeconds; };

      # A wrapper exports the user's configuration, then runs the packaged program. The caller's HOME, USER
      # and LOCAL_WEBHOOK_STATE_DIR are left alone: they say who is calling and where the receiver keeps its
      # files, which only the caller knows.
      wrapper = program: variables: pkgs.writeShellScriptBin program (''
        # ${program} for ${name}, generated by services.agent-box.users.${name}
      '' + concatStrings (mapAttrsToList (n: v: "export ${n}=${escapeShellArg v}\n") variables) + ''
        exec ${lib.getExe' cfg.package program} "$@"
      '');

      sessionWrapper = wrapper "agent-box-session" (sharedEnvironment // u.environment);
      spawnWrapper = wrapper "agent-box-webhook-spawn" (
        sharedEnvironment // { AGENT_BOX_HOOK_SESSION_ARGS = builtins.toJSON u.webhook.hookSessionArgs; } // u.environment
      );
    in
    {
      inherit home limitFile harnesses seed epilogue epilogueLink sessionWrapper spawnWrapper;

      # Harness names without an `agents` entry: the supervisor looks for them in ~/.nix-profile/bin at run
      # time (30-supervisor §12.1).
      unresolvedHarnesses = filter (h: !(u.agents ? ${h})) harnesses;

      runtimeDirectory = "agent-box-${name}";

      # PATH of the unit (NixOS adds bin/ and sbin/ of each): panes inherit it, so an agent's
      # `agent-box-session` is this user's wrapper.
      path = [ cfg.tmuxPackage pkgs.coreutils pkgs.bashInteractive sessionWrapper spawnWrapper ];

      # NX-7. USER comes from User=, PATH from `path`.
      environment = {
        HOME = home;
        # For agents in panes that call tmux themselves; our programs derive the same directory on their own.
        TMUX_TMPDIR = "/run/agent-box-${name}";
        # The derivation rather than its path string: NixOS writes the same text, and the evaluation checks
        # can read the seed's contents back.
        AGENT_BOX_SESSIONS_SEED = seed;
        AGENT_BOX_AGENT_BINS = concatStringsSep " " (mapAttrsToList (h: exe: "${h}=${exe}") u.agents);
        AGENT_BOX_MARK_STOPPED = "/etc/${epilogueLink}";
        AGENT_BOX_HOST_LABEL = config.networking.fqdnOrHostName;
        AGENT_BOX_RESTART_NOTICE = u.restartNotice;
      }
      // optionalAttrs (u.onOutcome != null) {
        # Issue 21 (docs/notification.md): a package stands for its main program.
        AGENT_BOX_ON_OUTCOME =
          if lib.isDerivation u.onOutcome then lib.getExe u.onOutcome else toString u.onOutcome;
      }
      // sharedEnvironment
      // optionalAttrs u.webhook.enable {
        # Only non-emptiness is read (30-supervisor §1).
        AGENT_BOX_WEBHOOK_REPO = "1";
        LOCAL_WEBHOOK_STATE_DIR = "${home}/.local/state/local-webhook";
      }
      // u.environment;
    };

  # Directives every unit of a box user shares: who runs it, where it may write, how it is confined (NX-5).
  confinement = name: v: {
    User = name;
    UMask = "0077";
    # Agents die before system services under memory pressure.
    OOMScoreAdjust = 500;
    EnvironmentFile = [ "-/etc/agent-box/units/${name}.env" "-/etc/agent-box/units/${name}.local.env" ];
    PrivateTmp = true;
    PrivateDevices = true;
    ProtectSystem = "strict";
    ReadWritePaths = [ v.home ];
    ProtectKernelTunables = true;
    ProtectKernelModules = true;
    ProtectControlGroups = true;
    ProtectClock = true;
    RestrictSUIDSGID = true;
    RestrictRealtime = true;
    LockPersonality = true;
    # On purpose: agents may run setuid helpers that the admin allows.
    NoNewPrivileges = false;
  };

  tmuxUnitName = name: "agent-box-tmux-${name}.service";

  # agent-box-tmux-<name>.service (spec 75 UP-2.1): the tmux server in the foreground (-D also keeps it up without
  # a session), so the server and every pane live in this unit's cgroup and nowhere else. A switch never restarts
  # or stops it, because that would end every session; a changed unit takes effect at the next boot or an explicit
  # `systemctl restart`. KillMode=control-group: stopping it ends the server, every pane and whatever an agent left
  # behind. The runtime directory that holds the socket belongs here, and is kept when the unit stops.
  tmuxUnit = name: v: {
    description = "agent-box tmux server of ${name} (every session runs in it)";
    wantedBy = [ "multi-user.target" ];
    after = [ "network-online.target" ];
    wants = [ "network-online.target" ];
    inherit (v) path environment;
    restartIfChanged = false;
    stopIfChanged = false;
    # A-8, the rule of the installed units: never give up. systemd's default start limit (5 starts in 10 s) would
    # leave a tmux that exits at once down for good, and every session with it; NixOS writes this into [Unit].
    startLimitIntervalSec = 0;
    serviceConfig = confinement name v // {
      Type = "simple";
      ExecStart = "${lib.getExe' cfg.tmuxPackage "tmux"} -D -L agent-box";
      Restart = "always";
      RestartSec = "1s";
      RuntimeDirectory = v.runtimeDirectory;
      RuntimeDirectoryMode = "0700";
      RuntimeDirectoryPreserve = "yes";
      KillMode = "control-group";
      # An agent that ignores SIGHUP must not hold a stop for systemd's 90 s default.
      TimeoutStopSec = "15s";
    };
  };

  # agent-box-<name>.service (NX-5 as changed by spec 75 UP-2.2): only the supervisor. It lists the server of the
  # tmux unit and never starts one (AGENT_BOX_TMUX_SERVER=external), so any end of it (an upgrade, which restarts
  # it by restartIfChanged's default, a crash, `systemctl restart`) touches no pane: no ExecStop, no runtime
  # directory, and KillMode=control-group ends only the supervisor. Wants=, not Requires=: a stopped tmux unit
  # must not stop the supervisor, which waits for the server and then starts every session again.
  supervisorUnit = name: v: {
    description = "agent-box supervisor of ${name}";
    wantedBy = [ "multi-user.target" ];
    after = [ "network-online.target" (tmuxUnitName name) ];
    wants = [ "network-online.target" (tmuxUnitName name) ];
    inherit (v) path;
    environment = v.environment // { AGENT_BOX_TMUX_SERVER = "external"; };
    # A-8, as for the tmux unit: a crash loop is retried RestartSec apart for as long as it lasts.
    startLimitIntervalSec = 0;
    serviceConfig = confinement name v // {
      Type = "exec";
      ExecStart = lib.getExe' cfg.package "agent-box-supervisor";
      Restart = "always";
      RestartSec = "2s";
      KillMode = "control-group";
      TimeoutStopSec = "15s";
    };
  };

  # ---- options ----------------------------------------------------------------------------------------

  sessionModule = user: { config, ... }: {
    options = {
      agent = mkOption {
        type = types.str;
        default = user.defaultAgent;
        defaultText = literalExpression "defaultAgent";
        description = "The harness that runs in this session.";
      };
      workingDirectory = mkOption {
        type = types.nullOr types.str;
        default = null;
        description = "Absolute directory the session starts in; null means the user's home.";
      };
      extraArgs = mkOption {
        type = types.listOf types.str;
        default = [ ];
        description = "Arguments appended to the harness command line.";
      };
      initialPrompt = mkOption {
        type = types.nullOr types.str;
        default = null;
        description = "Prompt for the first start (consumed by the supervisor at the first spawn).";
      };
      resumePrompt = mkOption {
        type = types.nullOr types.str;
        default = null;
        description = "Prompt for every resumed start.";
      };
      skipPermissions = mkOption {
        type = types.bool;
        default = true;
        description = "Whether the harness runs without permission prompts.";
      };
      remoteControl = mkOption {
        type = types.bool;
        default = config.agent != "codex";
        defaultText = literalExpression ''agent != "codex"'';
        description = "Whether remote control is enabled for the session.";
      };
      remoteControlName = mkOption {
        type = types.nullOr types.str;
        default = null;
        description = "Remote-control name; null lets the supervisor derive one from the host label.";
      };
    };
  };

  userModule = { name, config, ... }: {
    options = {
      defaultAgent = mkOption {
        type = types.str;
        default = "claude";
        description = "The default harness (AGENT_BOX_DEFAULT_AGENT); every hook session uses it.";
      };
      agents = mkOption {
        type = types.attrsOf types.path;
        default = { shell = "${pkgs.bashInteractive}/bin/bash"; };
        defaultText = literalExpression ''{ shell = "''${pkgs.bashInteractive}/bin/bash"; }'';
        example = literalExpression ''{ claude = lib.getExe pkgs.claude-code; shell = lib.getExe pkgs.bashInteractive; }'';
        description = ''
          Harness name → executable (AGENT_BOX_AGENT_BINS). Setting it replaces the default, so list `shell`
          too if you want it. A harness named by defaultAgent or a session but missing here is looked up in the
          user's ~/.nix-profile/bin when a session starts.
        '';
      };
      sessions = mkOption {
        type = types.attrsOf (types.submodule (sessionModule config));
        default = { main = { agent = config.defaultAgent; }; };
        defaultText = literalExpression "{ main = { agent = defaultAgent; }; }";
        description = ''
          The seed: the sessions written to ~/.config/agent-box/sessions.json when it is missing or empty. An
          existing registry is never replaced; change it with agent-box-session.
        '';
      };
      sessionLimit = mkOption {
        type = types.either (types.enum [ "auto" ]) types.ints.positive;
        default = "auto";
        description = ''How many sessions may run at once; "auto" derives it from the memory size.'';
      };
      queue = {
        maxRecords = mkOption {
          type = types.nullOr (types.ints.between 1 100000);
          default = null;
          description = ''
            How many event batches the intake queue holds at once (AGENT_BOX_QUEUE_MAX; docs/intake.md): a batch
            that finds the box full waits there for a slot, and past this many the oldest one expires, loudly.
            null: the programs' default, 500.
          '';
        };
        maxAgeSeconds = mkOption {
          type = types.nullOr (types.ints.between 60 604800);
          default = null;
          description = ''
            How long a queued batch may wait for a slot before it expires (AGENT_BOX_QUEUE_MAX_AGE, in seconds;
            at most 7 days, the redelivery window). null: the programs' default, 86400 (one day).
          '';
        };
      };
      restartNotice = mkOption {
        type = types.enum [ "auto" "always" "never" ];
        default = "auto";
        description = "When a resumed session is told that it was restarted (AGENT_BOX_RESTART_NOTICE).";
      };
      onOutcome = mkOption {
        type = types.nullOr (types.either types.package types.path);
        default = null;
        example = literalExpression ''pkgs.writeShellScript "notify-gh" (builtins.readFile ./notify-gh.sh)'';
        description = ''
          A program the supervisor runs once for each recorded lease outcome (vanished, died:N, stopped), with
          the outcome as JSON on standard input, until it exits 0 (AGENT_BOX_ON_OUTCOME; docs/notification.md).
          A package stands for its main program. null: outcomes are only recorded.
        '';
      };
      webhook = {
        enable = mkEnableOption "webhook delivery for this user's sessions";
        hookSessionArgs = mkOption {
          type = types.listOf types.str;
          default = [ ];
          description = "Arguments appended to every hook session (AGENT_BOX_HOOK_SESSION_ARGS).";
        };
        spawnCommand = mkOption {
          type = types.path;
          readOnly = true;
          default = lib.getExe' (perUser name config).spawnWrapper "agent-box-webhook-spawn";
          defaultText = literalExpression ''"<this user's wrapper>/bin/agent-box-webhook-spawn"'';
          description = "This user's agent-box-webhook-spawn wrapper, for the webhook receiver's spawn command.";
        };
      };
      environment = mkOption {
        type = types.attrsOf types.str;
        default = { };
        example = { AGENT_BOX_CLAUDE_SETTINGS = "/etc/agent-box/claude-settings.json"; };
        description = "Extra variables for the unit and the user's wrappers.";
      };
    };
  };

  # ---- checks -----------------------------------------------------------------------------------------

  userAssertions = name: u:
    let
      v = perUser name u;
      where = "services.agent-box.users.${name}";
    in
    [
      {
        # NixOS gives every user home = "/var/empty" unless it is a normal user or sets one, and a user that
        # only this module mentions is such a user: one test covers "missing" and "without a home".
        assertion = builtins.match "/.*[^/]" v.home != null && v.home != "/var/empty";
        message = "${where}: the user ${name} must exist with a home directory (declare users.users.${name}"
          + " with isNormalUser = true, or with a home); found home = ${v.home}";
      }
    ]
    ++ mapAttrsToList (session: _:
      let problem = sessionNameProblem session;
      in {
        assertion = problem == null;
        message = "${where}.sessions: the session name \"${session}\" is not allowed: ${toString problem}";
      }) u.sessions
    ++ map (h: {
      assertion = isPlainName h;
      message = "${where}: the harness name \"${h}\" must match [A-Za-z0-9_-]+ (it becomes a word of"
        + " AGENT_BOX_AGENTS and a name=path pair of AGENT_BOX_AGENT_BINS)";
    }) v.harnesses
    ++ mapAttrsToList (h: exe: {
      assertion = builtins.match ".*[[:space:]].*" exe == null;
      message = "${where}.agents.${h}: the path \"${exe}\" contains white space, which AGENT_BOX_AGENT_BINS"
        + " cannot carry";
    }) u.agents
    ++ mapAttrsToList (n: source: {
      assertion = false;
      message = "${where}.environment.${n}: the module sets it from ${source}; set that instead";
    }) (builtins.intersectAttrs u.environment ownedVariables)
    ++ mapAttrsToList (n: why: {
      assertion = false;
      message = "${where}.environment.${n}: never set on a box (${why})";
    }) (builtins.intersectAttrs u.environment forbiddenVariables)
    ++ mapAttrsToList (n: value: {
      assertion = false;
      message = "${where}.environment.${n}: the module sets it to ${value}";
    }) (builtins.intersectAttrs u.environment fixedVariables);
in
{
  options.services.agent-box = {
    enable = mkEnableOption "agent-box: keep each configured user's AI coding-agent sessions alive in tmux";

    package = mkOption {
      type = types.package;
      default = pkgs.callPackage ./package.nix { };
      defaultText = literalExpression "pkgs.callPackage ./package.nix { }";
      description = "The agent-box programs.";
    };

    tmuxPackage = mkOption {
      type = types.package;
      default = pkgs.tmux;
      defaultText = literalExpression "pkgs.tmux";
      description = "The tmux that runs the sessions; 3.2 or later.";
    };

    users = mkOption {
      type = types.attrsOf (types.submodule userModule);
      default = { };
      description = ''
        The box users, each with a tmux server unit agent-box-tmux-<name>.service (every session runs in it) and a
        supervisor unit agent-box-<name>.service.
      '';
    };
  };

  config = mkIf cfg.enable (
    let
      users = builtins.mapAttrs perUser cfg.users;
    in
    {
      assertions = [
        {
          assertion = lib.versionAtLeast (lib.getVersion cfg.tmuxPackage) "3.2";
          message = "services.agent-box.tmuxPackage: tmux ${lib.getVersion cfg.tmuxPackage} is too old; the"
            + " supervisor needs 3.2 or later (new-session -e)";
        }
      ]
      ++ lib.concatLists (mapAttrsToList userAssertions cfg.users);

      warnings = lib.concatLists (mapAttrsToList (name: v:
        map (h: "services.agent-box.users.${name}: the harness \"${h}\" has no entry in agents; the supervisor"
          + " looks for ~${name}/.nix-profile/bin/${h} when a session starts") v.unresolvedHarnesses
      ) users);

      systemd.services = perUserAttrs (name: v: [
        (nameValuePair "agent-box-tmux-${name}" (tmuxUnit name v))
        (nameValuePair "agent-box-${name}" (supervisorUnit name v))
      ]) users;

      users.users = builtins.mapAttrs (_: v: { packages = [ v.sessionWrapper v.spawnWrapper ]; }) users;

      environment.etc = perUserAttrs (name: v: [
        (nameValuePair "agent-box/users/${name}/session-limit" { text = "${toString cfg.users.${name}.sessionLimit}\n"; })
        (nameValuePair v.epilogueLink { source = "${v.epilogue}/bin/agent-box-mark-stopped"; })
      ]) users;
    }
  );
}
