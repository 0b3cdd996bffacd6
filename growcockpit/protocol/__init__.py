"""The contract between the backend and any number of cockpits (stdlib only).

`events` (what happened, one JSON line each), `eventlog` (append and tail
`events.jsonl`), `commands` and `control` (steering a live run over its Unix
socket), `rundir` (the layout of `runs/<id>/` and its `status.json`).
"""

from .commands import COMMANDS, CommandAck, CommandError, CommandRequest
from .control import ControlError, ControlServer
from .control_client import send_command
from .eventlog import EventLog, EventTail, read_all
from .events import (
    EVENT_TYPES,
    Checkpoint,
    CommandEvent,
    Error,
    ErrorEvent,
    Eval,
    Event,
    GpuStat,
    Grow,
    LayerStat,
    LayerStats,
    Paused,
    PlanChanged,
    Resumed,
    RunFinished,
    RunStarted,
    StageStarted,
    Step,
    System,
    UnknownEvent,
    Warning,
    WarningEvent,
    decode_event,
    encode_event,
    event_from_dict,
)
from .pending import PendingCommand
from .rundir import (
    FINAL_STATES,
    LIVE_STATES,
    RunDirError,
    RunPaths,
    RunStatus,
    pid_alive,
    read_status,
    write_status,
)
from .socket_path import (
    MAX_SOCKET_PATH,
    connect_path,
    needs_short_path,
    peer_uid,
    private_socket_path,
)

__all__ = [
    "COMMANDS",
    "EVENT_TYPES",
    "FINAL_STATES",
    "LIVE_STATES",
    "MAX_SOCKET_PATH",
    "Checkpoint",
    "CommandAck",
    "CommandError",
    "CommandEvent",
    "PlanChanged",
    "CommandRequest",
    "ControlError",
    "ControlServer",
    "Error",
    "ErrorEvent",
    "Eval",
    "Event",
    "EventLog",
    "EventTail",
    "GpuStat",
    "Grow",
    "LayerStat",
    "LayerStats",
    "Paused",
    "PendingCommand",
    "Resumed",
    "RunDirError",
    "RunFinished",
    "RunPaths",
    "RunStarted",
    "RunStatus",
    "StageStarted",
    "Step",
    "System",
    "UnknownEvent",
    "Warning",
    "WarningEvent",
    "connect_path",
    "decode_event",
    "encode_event",
    "event_from_dict",
    "needs_short_path",
    "pid_alive",
    "read_all",
    "read_status",
    "send_command",
    "peer_uid",
    "private_socket_path",
    "write_status",
]
