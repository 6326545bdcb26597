"""What crosses a process boundary: the agent's contract and messages, the viewer's commands and the messages it is
sent, snapshot packing, the cross-node link, the sockets that guard them, and the job directory through which a
viewer finds a collector. Torch-free; imports only ``core``."""
