# SPDX-License-Identifier: MIT
# python/crlm/types.py -- what completion() returns, shaped as the
# reference library's rlm.core.types: RLMChatCompletion, UsageSummary,
# ModelUsageSummary, with their to_dict() / from_dict().


class ModelUsageSummary:
    """The calls and tokens of one model in one completion (any depth)."""

    def __init__(self, total_calls=0, total_input_tokens=0, total_output_tokens=0,
                 total_cost=None):
        self.total_calls = total_calls
        self.total_input_tokens = total_input_tokens
        self.total_output_tokens = total_output_tokens
        self.total_cost = total_cost

    def to_dict(self):
        d = {'total_calls': self.total_calls,
             'total_input_tokens': self.total_input_tokens,
             'total_output_tokens': self.total_output_tokens}
        if self.total_cost is not None:
            d['total_cost'] = self.total_cost
        return d

    @classmethod
    def from_dict(cls, d):
        return cls(total_calls=d.get('total_calls', 0),
                   total_input_tokens=d.get('total_input_tokens', 0),
                   total_output_tokens=d.get('total_output_tokens', 0),
                   total_cost=d.get('total_cost'))

    def __eq__(self, other):
        return isinstance(other, ModelUsageSummary) and self.to_dict() == other.to_dict()

    def __repr__(self):
        return 'ModelUsageSummary(%s)' % ', '.join('%s=%r' % kv for kv in self.to_dict().items())


class UsageSummary:
    """model name -> ModelUsageSummary."""

    def __init__(self, model_usage_summaries=None):
        self.model_usage_summaries = dict(model_usage_summaries or {})

    @property
    def total_cost(self):
        costs = [m.total_cost for m in self.model_usage_summaries.values()
                 if m.total_cost is not None]
        return sum(costs) if costs else None

    @property
    def total_input_tokens(self):
        return sum(m.total_input_tokens for m in self.model_usage_summaries.values())

    @property
    def total_output_tokens(self):
        return sum(m.total_output_tokens for m in self.model_usage_summaries.values())

    def to_dict(self):
        d = {'model_usage_summaries': {k: v.to_dict()
                                       for k, v in self.model_usage_summaries.items()}}
        if self.total_cost is not None:
            d['total_cost'] = self.total_cost
        return d

    @classmethod
    def from_dict(cls, d):
        return cls({k: ModelUsageSummary.from_dict(v)
                    for k, v in (d.get('model_usage_summaries') or {}).items()})

    @classmethod
    def _from_api(cls, by_model):
        """From the C result's "usage_by_model"."""
        return cls({k: ModelUsageSummary(total_calls=int(v.get('calls', 0)),
                                         total_input_tokens=int(v.get('input_tokens', 0)),
                                         total_output_tokens=int(v.get('output_tokens', 0)),
                                         total_cost=v.get('cost'))
                    for k, v in (by_model or {}).items()})

    def __eq__(self, other):
        return isinstance(other, UsageSummary) and self.to_dict() == other.to_dict()

    def __repr__(self):
        return 'UsageSummary(model_usage_summaries=%r)' % (self.model_usage_summaries,)


class RLMChatCompletion:
    """The result of completion(): response is the answer as a str (with
    schema=, the answer's JSON text; answer_json the value). Ours, outside
    to_dict(): answer_json, stop (why the solve ended: "answer",
    "max_iterations", "incomplete"), result (the C side's whole result
    object, as `rlm solve --json` prints it)."""

    def __init__(self, root_model, prompt, response, usage_summary, execution_time,
                 metadata=None, answer_json=None, stop=None, result=None):
        self.root_model = root_model
        self.prompt = prompt
        self.response = response
        self.usage_summary = usage_summary
        self.execution_time = execution_time
        self.metadata = metadata
        self.answer_json = answer_json
        self.stop = stop
        self.result = result

    def to_dict(self):
        d = {'root_model': self.root_model,
             'prompt': self.prompt,
             'response': self.response,
             'usage_summary': self.usage_summary.to_dict(),
             'execution_time': self.execution_time}
        if self.metadata is not None:
            d['metadata'] = self.metadata
        return d

    @classmethod
    def from_dict(cls, d):
        return cls(root_model=d.get('root_model'), prompt=d.get('prompt'),
                   response=d.get('response'),
                   usage_summary=UsageSummary.from_dict(d.get('usage_summary') or {}),
                   execution_time=d.get('execution_time'), metadata=d.get('metadata'))

    # As the reference's dataclass: repr (and so str and print) names every
    # field of to_dict() in its order, and == compares them.
    def __repr__(self):
        return ('RLMChatCompletion(root_model=%r, prompt=%r, response=%r, usage_summary=%r, '
                'execution_time=%r, metadata=%r)'
                % (self.root_model, self.prompt, self.response, self.usage_summary,
                   self.execution_time, self.metadata))

    def __eq__(self, other):
        return isinstance(other, RLMChatCompletion) and self.to_dict() == other.to_dict()

    __hash__ = None  # a dataclass with eq and not frozen is unhashable
