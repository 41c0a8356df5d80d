"""The MLflow pyfunc of a compiled kgqa program (models-from-code: MLflow logs this file as the
model; `kgqa.serving.log_model` logs it with the program directory as its artifact)."""

from __future__ import annotations

import mlflow
from mlflow.exceptions import MlflowException
from mlflow.protos.databricks_pb2 import INVALID_PARAMETER_VALUE, TEMPORARILY_UNAVAILABLE
from mlflow.pyfunc import PythonModel


class KGQAModel(PythonModel):
    def load_context(self, context) -> None:
        from kgqa.env import stay_offline

        stay_offline()
        from kgqa.lm.adapter import ConstrainedJSONAdapter
        from kgqa.programs.saving import load_program, read_settings
        from kgqa.serving import ARTIFACT, serve_settings
        from kgqa.specs import make_lm, open_kg

        directory = context.artifacts[ARTIFACT]
        saved = read_settings(directory)
        kg_spec, lm_spec, api_base = serve_settings(saved)
        self.lm = make_lm(lm_spec, api_base=api_base)
        self.adapter = ConstrainedJSONAdapter()
        self.program = load_program(directory, open_kg(kg_spec, profile=saved.get("profile")))

    def predict(self, context, model_input, params=None) -> list[dict]:
        import dspy

        from kgqa.serving import BadRequest, questions_of

        try:
            questions = questions_of(model_input)
        except BadRequest as exc:
            raise MlflowException(str(exc), error_code=INVALID_PARAMETER_VALUE) from None
        answers = []
        with dspy.context(lm=self.lm, adapter=self.adapter):
            for question, topics in questions:
                prediction = self.program(question=question, topic_entities=topics)
                if prediction.trace.stop_reason == "lm_error":  # an outage, not an answer: 503 from MLflow's server
                    raise MlflowException(prediction.trace.error or "the LM did not answer", error_code=TEMPORARILY_UNAVAILABLE)
                answers.append({"answers": list(prediction.answers), "paths": list(prediction.paths),
                                "trace": prediction.trace.to_dict()})
        return answers


mlflow.models.set_model(KGQAModel())
