"""Knowledge distillation as keras-io teaches it: three fit calls in one script.

A teacher is trained, then a Distiller (a keras.Model subclass whose compute_loss mixes the
student's loss with the teacher's softened predictions) trains the student, then a student of
the same shape is trained from scratch for comparison. The Distiller's fit asks for the most
steps. Data: random arrays of MNIST's flattened shape, smaller.
"""

import numpy as np
import keras
from keras import ops

x_train = np.random.rand(2048, 196).astype("float32")
y_train = np.random.randint(0, 10, size=(2048,))
x_test, y_test = x_train[:256], y_train[:256]


def make(name, width):
    return keras.Sequential(
        [keras.Input(shape=(196,)), keras.layers.Dense(width, activation="relu"), keras.layers.Dense(10)], name=name
    )


class Distiller(keras.Model):
    def __init__(self, student, teacher):
        super().__init__()
        self.teacher = teacher
        self.student = student

    def compile(self, optimizer, metrics, student_loss_fn, distillation_loss_fn, alpha=0.1, temperature=3):
        super().compile(optimizer=optimizer, metrics=metrics)
        self.student_loss_fn = student_loss_fn
        self.distillation_loss_fn = distillation_loss_fn
        self.alpha = alpha
        self.temperature = temperature

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, allow_empty=False):
        teacher_pred = self.teacher(x, training=False)
        student_loss = self.student_loss_fn(y, y_pred)
        t = self.temperature
        distillation_loss = self.distillation_loss_fn(
            ops.softmax(teacher_pred / t, axis=1), ops.softmax(y_pred / t, axis=1)
        ) * (t**2)
        return self.alpha * student_loss + (1 - self.alpha) * distillation_loss

    def call(self, x):
        return self.student(x)


teacher = make("teacher", 256)
student = make("student", 32)
student_scratch = keras.models.clone_model(student)

teacher.compile(
    optimizer=keras.optimizers.Adam(),
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=[keras.metrics.SparseCategoricalAccuracy()],
)
history = teacher.fit(x_train, y_train, epochs=2, batch_size=32)
print("teacher's last loss:", history.history["loss"][-1])
teacher.evaluate(x_test, y_test)

distiller = Distiller(student=student, teacher=teacher)
distiller.compile(
    optimizer=keras.optimizers.Adam(),
    metrics=[keras.metrics.SparseCategoricalAccuracy()],
    student_loss_fn=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    distillation_loss_fn=keras.losses.KLDivergence(),
    alpha=0.1,
    temperature=10,
)
distiller.fit(x_train, y_train, epochs=3, batch_size=32)
distiller.evaluate(x_test, y_test)

student_scratch.compile(
    optimizer=keras.optimizers.Adam(),
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=[keras.metrics.SparseCategoricalAccuracy()],
)
student_scratch.fit(x_train, y_train, epochs=2, batch_size=32)
student_scratch.evaluate(x_test, y_test)
