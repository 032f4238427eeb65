"""tau2-bench (airline, retail) as agent-eval suite folders: `agent-eval bench import tau2`."""
